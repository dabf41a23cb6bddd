import type { Logger } from "@toolmesh/log";
import { buckets, FollowedBucket, type SnapshotView } from "@toolmesh/nats";
import {
  type BudgetKind,
  type BudgetPeriodWord,
  type BudgetWindow,
  budgetId,
  budgetPeriodOf,
  budgetWindow,
} from "@toolmesh/policy";
import {
  type Budget,
  BudgetPeriod,
  BudgetSchema,
  type Price,
  StoredSpendSchema,
} from "@toolmesh/proto";
import type { NatsConnection } from "nats";

/** Who a call's cost counts against. */
export interface BudgetedCall {
  agentId: string;
  userId: string;
  /** The allow grants that authorised the call. */
  grantIds: readonly string[];
}

/** A call that budgets apply to, and those budgets. */
export interface BudgetedCallOf extends BudgetedCall {
  budgets: readonly Budget[];
}

/** A call over a budget: which, what is left, and when it is whole again. */
export interface OverBudget {
  budget: Budget;
  remainingMicros: bigint;
  callMicros: bigint;
  resetsAtMs: number;
}

/** What a call admitted under budgets holds until it ends: the per-call price, per budget key. */
export interface BudgetHold {
  /** The budgets the call counts against, by id. */
  budgetIds: string[];
  /** Spend keys of the reservation (the periods at admission). */
  keys: string[];
  reservedMicros: bigint;
}

/** Spend keys this Dispatcher remembers counting at most; the oldest periods go first. */
const MAX_COUNTED_KEYS = 100_000;

/**
 * The budgets Permission keeps (`budgets.>` of its bucket) and what has been spent against them:
 * Callback's spend per budget and period (`spend.>` of the usage bucket, derived from the calls'
 * end records), plus what this Dispatcher counted that Callback has not yet (its own figure minus
 * the part Callback attributes to this instance), plus the per-call price of calls still running.
 * A call that would take a budget past its limit is refused; memory is bounded by budgets and
 * their periods, never by calls.
 */
export class BudgetLedger {
  private readonly counted = new Map<string, bigint>();
  private readonly reserved = new Map<string, bigint>();
  private readonly windows: Partial<Record<BudgetPeriodWord, BudgetWindow>> = {};

  constructor(
    private readonly budgets: SnapshotView<typeof BudgetSchema>,
    private readonly spend: SnapshotView<typeof StoredSpendSchema>,
    /** This Dispatcher's instance id, as its end records name it. */
    private readonly instance: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** True while there is no budget at all: calls skip the ledger. */
  get empty(): boolean {
    return this.budgets.size === 0;
  }

  /** Whether the budgets are loaded; until then calls of priced tools fail closed. */
  get budgetsReady(): boolean {
    return this.budgets.isReady;
  }

  /** Whether Callback's spend is loaded; until then calls under a budget fail closed. */
  get spendReady(): boolean {
    return this.spend.isReady;
  }

  /**
   * The first budget (of those that apply in the price's currency) that the call's per-call price
   * would take past its limit, counting what is spent and what calls running here hold; undefined
   * when every one has room.
   */
  over(applying: readonly Budget[], price: Price): OverBudget | undefined {
    const nowMs = this.now();
    const callMicros = price.perCallMicros;
    for (const budget of applying) {
      const { key, window } = this.keyOf(budget.id, nowMs);
      const limit = budget.spec?.limitMicros ?? 0n;
      const remaining = limit - this.spentAt(key) - (this.reserved.get(key) ?? 0n);
      if (remaining <= 0n || callMicros > remaining)
        return {
          budget,
          remainingMicros: remaining > 0n ? remaining : 0n,
          callMicros,
          resetsAtMs: window.endMs,
        };
    }
    return undefined;
  }

  /**
   * Holds a running call's per-call price against the budgets that apply to it (checked with
   * `over` before), so calls running at once see each other; undefined when none applies. End it
   * with `charge`.
   */
  hold(applying: readonly Budget[], price: Price): BudgetHold | undefined {
    if (applying.length === 0) return undefined;
    const nowMs = this.now();
    const keys = applying.map((budget) => this.keyOf(budget.id, nowMs).key);
    for (const key of keys)
      this.reserved.set(key, (this.reserved.get(key) ?? 0n) + price.perCallMicros);
    return {
      budgetIds: applying.map((b) => b.id),
      keys,
      reservedMicros: price.perCallMicros,
    };
  }

  /** Gives a hold's reservation back. */
  private release(hold: BudgetHold): void {
    for (const key of hold.keys) {
      const left = (this.reserved.get(key) ?? 0n) - hold.reservedMicros;
      if (left > 0n) this.reserved.set(key, left);
      else this.reserved.delete(key);
    }
  }

  /** A held call ended costing `micros` at `atMs`: counted here until Callback has it. */
  charge(hold: BudgetHold, micros: bigint, atMs: number): void {
    this.release(hold);
    if (micros === 0n) return;
    for (const id of hold.budgetIds) {
      const { key } = this.keyOf(id, atMs);
      if (!this.counted.has(key) && this.counted.size >= MAX_COUNTED_KEYS) this.forgetOldest();
      this.counted.set(key, (this.counted.get(key) ?? 0n) + micros);
    }
  }

  /** What is spent against a budget's period as far as this Dispatcher knows. */
  private spentAt(key: string): bigint {
    const stored = this.spend.get(key);
    const total = stored?.spentMicros ?? 0n;
    const mine = this.counted.get(key) ?? 0n;
    const seen = stored?.byInstance[this.instance] ?? 0n;
    return total + (mine > seen ? mine - seen : 0n);
  }

  private keyOf(id: string, ms: number) {
    const window = this.windowOf(budgetPeriodOf(id) ?? "day", ms);
    return { key: buckets.usage.spendKey(id, window.token), window };
  }

  /** The day or month `ms` falls in, kept while it lasts: naming it formats a date. */
  private windowOf(period: BudgetPeriodWord, ms: number): BudgetWindow {
    const kept = this.windows[period];
    if (kept && ms >= kept.startMs && ms < kept.endMs) return kept;
    const window = budgetWindow(period, ms);
    this.windows[period] = window;
    return window;
  }

  /** The budgets of the call's agent, user and grants counted in `currency`. */
  applying(call: BudgetedCall, currency: string): Budget[] {
    const found: Budget[] = [];
    const look = (kind: BudgetKind, target: string) => {
      for (const period of ["day", "month"] as const) {
        const budget = this.budgets.get(
          buckets.permission.budgetKey(budgetId(kind, target, period)),
        );
        if (budget?.spec?.currency === currency) found.push(budget);
      }
    };
    look("agent", call.agentId);
    if (call.userId !== "") look("user", call.userId);
    for (const grant of call.grantIds) look("grant", grant);
    return found;
  }

  private forgetOldest(): void {
    const first = this.counted.keys().next().value;
    if (first !== undefined) this.counted.delete(first);
  }
}

/** A budget period's name in messages: `day`, `month`. */
export function periodWord(budget: Budget): string {
  return budget.spec?.period === BudgetPeriod.MONTH ? "month" : "day";
}

/** The budgets, followed from the Permission service's bucket like the rate limits. */
export function followBudgets(
  nc: NatsConnection,
  log: Logger,
): FollowedBucket<typeof BudgetSchema> {
  return new FollowedBucket({
    nc,
    bucket: buckets.permission.name,
    prefix: buckets.permission.budgetPrefix,
    schema: BudgetSchema,
    log,
    meanwhile: "calls fail closed until the Permission service creates it",
    readyMessage: "budget snapshot loaded",
  });
}

/** What has been spent against budgets, followed from Callback's usage bucket. */
export function followSpend(
  nc: NatsConnection,
  log: Logger,
): FollowedBucket<typeof StoredSpendSchema> {
  return new FollowedBucket({
    nc,
    bucket: buckets.usage.name,
    prefix: buckets.usage.spendPrefix,
    schema: StoredSpendSchema,
    log,
    meanwhile: "calls under a budget fail closed until the Callback service creates it",
    readyMessage: "budget spend snapshot loaded",
  });
}
