import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, retryLater } from "@toolmesh/errors";
import {
  BudgetExceededSchema,
  type Cost,
  CostSchema,
  type Decision,
  formatMicros,
  type Price,
  type Principal,
} from "@toolmesh/proto";
import {
  type BudgetedCallOf,
  type BudgetHold,
  type BudgetLedger,
  periodWord,
} from "../catalog/budget-ledger.js";
import { Refusal } from "./refusal.js";

/**
 * Checks a call of a priced tool against the budgets of its agent, user and authorising grants:
 * one its per-call price would take past the limit refuses it with RESOURCE_EXHAUSTED, a
 * BudgetExceeded detail and a RetryInfo until the period resets (recorded as a refusal like any
 * other). Returns who the call's cost counts against when a budget applies, else undefined.
 */
export function checkBudgets(
  ledger: BudgetLedger | undefined,
  principal: Principal,
  price: Price | undefined,
  decision: Decision,
): BudgetedCallOf | undefined {
  if (!ledger || !price) return undefined;
  if (!ledger.budgetsReady)
    throw new Refusal(
      new ConnectError(
        "the dispatcher has not loaded the budgets yet; retry in a moment",
        Code.Unavailable,
      ),
      "snapshot not ready",
    );
  if (ledger.empty) return undefined;
  const who = {
    agentId: principal.agentId,
    userId: principal.userId,
    grantIds: decision.matchedGrantIds,
  };
  const budgets = ledger.applying(who, price.currency);
  if (budgets.length === 0) return undefined;
  if (!ledger.spendReady)
    throw new Refusal(
      new ConnectError(
        "the dispatcher has not loaded what was spent against budgets yet (the Callback service keeps it); retry in a moment",
        Code.Unavailable,
      ),
      "snapshot not ready",
    );
  const over = ledger.over(budgets, price);
  if (!over) return { ...who, budgets };
  const { budget, remainingMicros, callMicros, resetsAtMs } = over;
  const currency = price.currency;
  const limit = budget.spec?.limitMicros ?? 0n;
  throw new Refusal(
    retryLater(
      `budget ${budget.id} has ${formatMicros(remainingMicros, currency)} left of ${formatMicros(limit, currency)} this ${periodWord(budget)}, and a call of this tool costs at least ${formatMicros(callMicros, currency)}; it resets at ${new Date(resetsAtMs).toISOString()}`,
      resetsAtMs - Date.now(),
      {
        details: [
          {
            desc: BudgetExceededSchema,
            value: create(BudgetExceededSchema, {
              budgetId: budget.id,
              currency,
              limitMicros: limit,
              remainingMicros,
              callMicros,
              resetsAt: timestampFromMs(resetsAtMs),
            }),
          },
        ],
      },
    ),
    `over budget ${budget.id}`,
  );
}

/**
 * What a call of a priced tool cost: its price per call, per second of execution (prorated by
 * the millisecond, rounded down) and what the tool reported. A call whose tool never ran costs
 * nothing.
 */
export function callCost(
  price: Price | undefined,
  run: { attempts: number; durationMs: number; reportedMicros: bigint },
): Cost | undefined {
  if (!price) return undefined;
  if (run.attempts === 0) return create(CostSchema, { currency: price.currency });
  const timed = (price.perSecondMicros * BigInt(Math.max(0, run.durationMs))) / 1000n;
  return create(CostSchema, {
    currency: price.currency,
    micros: price.perCallMicros + timed + run.reportedMicros,
    reportedMicros: run.reportedMicros,
  });
}

/** A running call's hold on its budgets, ended with its cost once it ends. */
export function holdBudgets(
  ledger: BudgetLedger | undefined,
  call: BudgetedCallOf | undefined,
  price: Price | undefined,
): BudgetHold | undefined {
  if (!ledger || !call || !price) return undefined;
  // Checked already: held even if a call that began meanwhile took the rest.
  return ledger.hold(call.budgets, price);
}
