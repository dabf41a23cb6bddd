import { create } from "@bufbuild/protobuf";
import { buckets, MemorySnapshot } from "@toolmesh/nats";
import { budgetId, budgetWindow } from "@toolmesh/policy";
import {
  BudgetPeriod,
  BudgetSchema,
  BudgetSubject,
  DecisionSchema,
  PriceSchema,
  PrincipalSchema,
  StoredSpendSchema,
} from "@toolmesh/proto";
import { BudgetLedger } from "../services/dispatcher/src/catalog/budget-ledger.js";
import { callCost, checkBudgets, holdBudgets } from "../services/dispatcher/src/chain/budgets.js";

// npm run bench:budgets: what budgets cost a call of a priced tool in the Dispatcher, on its call
// path: the check before the tool runs (checkBudgets), the hold while it runs, and its cost and
// charge when it ends. Everything is local (snapshots followed from the buckets), so its cost is
// CPU: measured with BENCH_BUDGETS budgets loaded and three applying to every call (its agent's,
// user's and grant's), against none applying and against no budget at all.
const budgetsLoaded = Number(process.env.BENCH_BUDGETS ?? 10_000);
const calls = Number(process.env.BENCH_BUDGET_CALLS ?? 1_000_000);
const agents = 64;
const price = create(PriceSchema, { currency: "USD", perCallMicros: 1n, perSecondMicros: 10n });
const grant = "0000000000000001";

function budget(subject: BudgetSubject, kind: "agent" | "user" | "grant", target: string) {
  // Large enough that every call passes: the cost measured is counting, not refusing.
  return create(BudgetSchema, {
    id: budgetId(kind, target, "day"),
    spec: { subject, target, period: BudgetPeriod.DAY, currency: "USD", limitMicros: 10n ** 15n },
  });
}

function ledgerOf(list: ReturnType<typeof budget>[]): BudgetLedger {
  const budgets = new MemorySnapshot(BudgetSchema);
  for (const b of list) budgets.put(buckets.permission.budgetKey(b.id), b);
  const spend = new MemorySnapshot(StoredSpendSchema);
  const day = budgetWindow("day", Date.now()).token;
  // Callback's spend of every applying budget, as a running stack has it.
  for (const b of list)
    spend.put(
      buckets.usage.spendKey(b.id, day),
      create(StoredSpendSchema, {
        budgetId: b.id,
        spentMicros: 1000n,
        byInstance: { other: 1000n },
      }),
    );
  return new BudgetLedger(budgets, spend, "bench");
}

function measure(ledger: BudgetLedger, label: string): number {
  const decision = create(DecisionSchema, { allowed: true, matchedGrantIds: [grant] });
  const principals = Array.from({ length: agents }, (_, a) =>
    create(PrincipalSchema, { agentId: `agent-${a}`, userId: `user-${a}` }),
  );
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const principal = principals[i % agents] ?? principals[0];
    if (!principal) throw new Error("no principal");
    const budgeted = checkBudgets(ledger, principal, price, decision);
    const hold = holdBudgets(ledger, budgeted, price);
    const cost = callCost(price, { attempts: 1, durationMs: 3, reportedMicros: 0n });
    if (hold) ledger.charge(hold, cost?.micros ?? 0n, Date.now());
  }
  const ns = Number(process.hrtime.bigint() - started) / calls;
  console.log(`${label.padEnd(46)} ${(ns / 1000).toFixed(2).padStart(6)} µs per call`);
  return ns;
}

const filler: ReturnType<typeof budget>[] = [];
for (let i = 0; filler.length < budgetsLoaded - (2 * agents + 1); i++)
  filler.push(budget(BudgetSubject.AGENT, "agent", `other-${i}`));
const applying = [budget(BudgetSubject.GRANT, "grant", grant)];
for (let a = 0; a < agents; a++) {
  applying.push(budget(BudgetSubject.AGENT, "agent", `agent-${a}`));
  applying.push(budget(BudgetSubject.USER, "user", `user-${a}`));
}

console.log(`${budgetsLoaded} budgets loaded, ${calls} calls of a priced tool, ${agents} agents`);
// A first round lets the JIT compile the path; the second is the one to read.
for (const round of ["warm-up", "measured"]) {
  console.log(`-- ${round}`);
  const empty = measure(ledgerOf([]), "no budget at all");
  const none = measure(ledgerOf(filler), "budgets loaded, none applies (look-ups only)");
  const three = measure(ledgerOf([...filler, ...applying]), "three apply (agent, user, grant)");
  console.log(
    `a call's cost of three applying budgets: ${((three - empty) / 1000).toFixed(2)} µs over no budget, ${((three - none) / 1000).toFixed(2)} µs over look-ups`,
  );
}
