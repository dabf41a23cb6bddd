import { invalidField } from "@toolmesh/errors";
import { checkPrincipalId } from "@toolmesh/names";
import { type BudgetKind, type BudgetPeriodWord, budgetId, CURRENCY } from "@toolmesh/policy";
import { BudgetPeriod, type BudgetSpec, BudgetSubject } from "@toolmesh/proto";
import { checkDescription, checkIssuedId } from "./validation.js";

/** Bounds of a budget an admin writes. */
export const budgetBounds = {
  /** How many budgets the bucket holds; every Dispatcher keeps them all in memory. */
  maxBudgets: 10_000,
  /** A trillion units of any currency: beyond it a budget limits nothing. */
  maxLimitMicros: 10n ** 18n,
  /** Ids are `<subject>.<escaped target>.<period>`; a target escapes to at most 3 bytes a byte. */
  maxIdLength: 400,
} as const;

const SUBJECT_WORD: Record<Exclude<BudgetSubject, BudgetSubject.UNSPECIFIED>, BudgetKind> = {
  [BudgetSubject.AGENT]: "agent",
  [BudgetSubject.USER]: "user",
  [BudgetSubject.GRANT]: "grant",
};

const PERIOD_WORD: Record<Exclude<BudgetPeriod, BudgetPeriod.UNSPECIFIED>, BudgetPeriodWord> = {
  [BudgetPeriod.DAY]: "day",
  [BudgetPeriod.MONTH]: "month",
};

/** The id (and KV key suffix) of a budget: one per subject, target and period. */
export function budgetIdOf(spec: BudgetSpec): string {
  return budgetId(
    SUBJECT_WORD[spec.subject as keyof typeof SUBJECT_WORD],
    spec.target,
    PERIOD_WORD[spec.period as keyof typeof PERIOD_WORD],
  );
}

/** Validates a budget an admin writes; INVALID_ARGUMENT naming the first bad field. */
export function validateBudgetSpec(spec: BudgetSpec | undefined): BudgetSpec {
  if (!spec) throw invalidField("budget", "is required");
  switch (spec.subject) {
    case BudgetSubject.AGENT:
    case BudgetSubject.USER:
      checkPrincipalId("budget.target", spec.target, false);
      break;
    case BudgetSubject.GRANT:
      checkIssuedId("budget.target", spec.target);
      break;
    default:
      throw invalidField("budget.subject", "must be AGENT, USER or GRANT");
  }
  if (spec.period !== BudgetPeriod.DAY && spec.period !== BudgetPeriod.MONTH)
    throw invalidField("budget.period", "must be DAY or MONTH");
  if (!CURRENCY.test(spec.currency))
    throw invalidField(
      "budget.currency",
      "must be 1-8 upper-case letters or digits starting with a letter, the currency of the tools' prices (USD, CREDITS)",
    );
  if (spec.limitMicros < 1n || spec.limitMicros > budgetBounds.maxLimitMicros)
    throw invalidField(
      "budget.limit_micros",
      `must be between 1 and ${budgetBounds.maxLimitMicros} (millionths of the currency: 5000000 is 5 ${spec.currency})`,
    );
  checkDescription("budget.description", spec.description);
  return spec;
}

/** Checks a budget id a caller names. */
export function checkBudgetId(field: string, id: string): void {
  if (id === "") throw invalidField(field, "must not be empty");
  if (
    id.length > budgetBounds.maxIdLength ||
    !/^(agent|user|grant)\.[A-Za-z0-9_=-]+\.(day|month)$/.test(id)
  )
    throw invalidField(
      field,
      "is not a budget id; ids look like agent.planner.day (see ListBudgets)",
    );
}
