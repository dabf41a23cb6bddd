import { buckets } from "@toolmesh/nats";
import { budgetPeriodOf, budgetWindow } from "@toolmesh/policy";
import type { CountedCall, SpentBlock } from "./usage-store.js";

/** One budget's period and what blocks of the audit log spent against it. */
export interface SpendOfKey {
  budget: { budgetId: string; period: string; currency: string };
  blocks: SpentBlock[];
}

/**
 * What the calls of held blocks cost against budgets, by spend key (`spend.<budget>.<period>`):
 * each priced call's cost counts against the budgets its end record names, in the day or month
 * it ended, by the Dispatcher instance that counted it.
 */
export function spendOf(
  batch: readonly { block: { seq: number }; calls: readonly CountedCall[] }[],
): Map<string, SpendOfKey> {
  const byKey = new Map<string, SpendOfKey>();
  for (const { block, calls } of batch) {
    for (const call of calls) {
      if (!call.cost || call.cost.micros === 0n) continue;
      for (const budgetId of call.budgets ?? []) {
        const period = budgetPeriodOf(budgetId);
        if (!period) continue;
        const window = budgetWindow(period, call.endedMs ?? call.hourMs);
        const key = buckets.usage.spendKey(budgetId, window.token);
        let entry = byKey.get(key);
        if (!entry) {
          entry = {
            budget: { budgetId, period: window.token, currency: call.cost.currency },
            blocks: [],
          };
          byKey.set(key, entry);
        }
        let share = entry.blocks.at(-1);
        if (share?.seq !== block.seq) {
          share = { seq: block.seq, costs: [] };
          entry.blocks.push(share);
        }
        share.costs.push({ micros: call.cost.micros, countedBy: call.countedBy ?? "" });
      }
    }
  }
  return byKey;
}
