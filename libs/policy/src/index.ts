export {
  type BudgetKind,
  type BudgetPeriodWord,
  type BudgetWindow,
  budgetId,
  budgetPeriodOf,
  budgetWindow,
  CURRENCY,
} from "./budgets.js";
export {
  ANY,
  appliesToAgent,
  appliesToUser,
  type CompiledGrant,
  compileGrant,
  coversTool,
  decide,
  decideFor,
  isLive,
  type PolicySubject,
  type PolicyTool,
} from "./decide.js";
export { compileGlob, globMatches, globProblem, MAX_PATTERN_LENGTH } from "./glob.js";
export { type GrantSnapshot, PolicyNotReadyError, PolicySnapshot } from "./snapshot.js";
export {
  type BucketShape,
  type RateLimitKind,
  rateLimitId,
  refill,
  type TokenBucket,
  waitForToken,
} from "./token-bucket.js";
