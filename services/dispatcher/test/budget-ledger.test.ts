import { create } from "@bufbuild/protobuf";
import { buckets, MemorySnapshot } from "@toolmesh/nats";
import {
  BudgetPeriod,
  BudgetSchema,
  BudgetSubject,
  PriceSchema,
  StoredSpendSchema,
} from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { BudgetLedger } from "../src/catalog/budget-ledger.js";

const DAY = 24 * 60 * 60 * 1000;
const price = create(PriceSchema, { currency: "USD", perCallMicros: 300_000n });
const call = { agentId: "a", userId: "u", grantIds: ["g1"] };

function ledgerAt(now: () => number) {
  const budgets = new MemorySnapshot(BudgetSchema);
  const spend = new MemorySnapshot(StoredSpendSchema);
  budgets.put(
    buckets.permission.budgetKey("user.u.day"),
    create(BudgetSchema, {
      id: "user.u.day",
      spec: {
        subject: BudgetSubject.USER,
        target: "u",
        period: BudgetPeriod.DAY,
        currency: "USD",
        limitMicros: 1_000_000n,
      },
    }),
  );
  return { budgets, spend, ledger: new BudgetLedger(budgets, spend, "me", now) };
}

describe("BudgetLedger", () => {
  it("refuses the call whose price would pass the limit, and is whole again the next day", () => {
    let now = 100 * DAY + 5000;
    const { ledger } = ledgerAt(() => now);
    const applying = ledger.applying(call, "USD");
    expect(applying.map((b) => b.id)).toEqual(["user.u.day"]);
    expect(ledger.applying(call, "EUR")).toEqual([]);
    for (let i = 0; i < 3; i++) {
      expect(ledger.over(applying, price)).toBeUndefined();
      const hold = ledger.hold(applying, price);
      expect(hold?.budgetIds).toEqual(["user.u.day"]);
      if (hold) ledger.charge(hold, 300_000n, now);
    }
    expect(ledger.over(applying, price)).toEqual({
      budget: expect.objectContaining({ id: "user.u.day" }),
      remainingMicros: 100_000n,
      callMicros: 300_000n,
      resetsAtMs: 101 * DAY,
    });
    now = 101 * DAY;
    expect(ledger.over(applying, price)).toBeUndefined();
  });

  it("counts calls running here, and adds only what Callback has not counted of its own", () => {
    const now = 100 * DAY;
    const { ledger, spend } = ledgerAt(() => now);
    const applying = ledger.applying(call, "USD");
    // Two calls running at once hold their price: the third finds too little left.
    const first = ledger.hold(applying, price);
    ledger.hold(applying, price);
    ledger.hold(applying, price);
    expect(ledger.over(applying, price)?.remainingMicros).toBe(100_000n);
    if (first) ledger.charge(first, 250_000n, now);
    expect(ledger.over(applying, price)?.remainingMicros).toBe(150_000n);

    // Callback counted 400_000: 250_000 of this instance's (so none is added twice) and 150_000
    // of another Dispatcher's.
    const key = buckets.usage.spendKey("user.u.day", "1970-04-11");
    spend.put(
      key,
      create(StoredSpendSchema, {
        budgetId: "user.u.day",
        spentMicros: 400_000n,
        byInstance: { me: 250_000n, other: 150_000n },
      }),
    );
    expect(ledger.over(applying, price)?.remainingMicros).toBe(0n);
  });
});
