import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { buckets } from "@toolmesh/nats";
import {
  type Budget,
  BudgetPeriod,
  BudgetSchema,
  type BudgetSpec,
  BudgetSubject,
  DeleteBudgetResponseSchema,
  formatMicros,
  ListBudgetsResponseSchema,
  type PermissionService,
  PutBudgetResponseSchema,
} from "@toolmesh/proto";
import { adminEntryRpcs } from "./admin-entries.js";
import { budgetBounds, budgetIdOf, checkBudgetId, validateBudgetSpec } from "./budgets.js";
import type { RateLimitDeps } from "./rate-limit-handlers.js";

type BudgetRpcs = Pick<
  ServiceImpl<typeof PermissionService>,
  "putBudget" | "deleteBudget" | "listBudgets"
>;

/** One sentence for the audit record. */
export function describeBudget(spec: BudgetSpec): string {
  const subject = BudgetSubject[spec.subject].toLowerCase();
  const period = BudgetPeriod[spec.period].toLowerCase();
  return `${formatMicros(spec.limitMicros, spec.currency)} a ${period} for ${subject} "${spec.target}"`;
}

/** PutBudget, DeleteBudget and ListBudgets: admin only and audited, like rate limits. */
export function createBudgetHandlers(deps: RateLimitDeps): BudgetRpcs {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  const budgets = adminEntryRpcs<Budget>(
    {
      kind: "budget",
      noun: "budget",
      listRpc: "ListBudgets",
      max: budgetBounds.maxBudgets,
      idPattern: /^[a-z]+\.[A-Za-z0-9_=-]+\.[a-z]+$/,
      maxIdLength: budgetBounds.maxIdLength,
      entries: store.budgets,
      key: buckets.permission.budgetKey,
      put: (budget) => store.putBudget(budget),
      remove: (id) => store.deleteBudget(id),
      checkId: checkBudgetId,
    },
    deps,
  );

  return {
    async putBudget(req, ctx) {
      const caller = budgets.admin(ctx);
      const spec = validateBudgetSpec(req.budget);
      const budget = create(BudgetSchema, {
        id: budgetIdOf(spec),
        spec,
        updatedBy: caller.agentId,
        updatedAt: timestampFromMs(now()),
      });
      await budgets.put(caller, budget, describeBudget(spec));
      return create(PutBudgetResponseSchema, { budget });
    },

    async deleteBudget(req, ctx) {
      await budgets.remove(ctx, req.id);
      return create(DeleteBudgetResponseSchema, {});
    },

    listBudgets(req, ctx) {
      const { page, nextPageToken } = budgets.list(ctx, req);
      return create(ListBudgetsResponseSchema, { budgets: page, nextPageToken });
    },
  };
}
