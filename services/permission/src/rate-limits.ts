import { invalidField } from "@toolmesh/errors";
import { checkPrincipalId, checkToolName } from "@toolmesh/names";
import { type RateLimitKind, rateLimitId } from "@toolmesh/policy";
import { type RateLimitSpec, RateLimitSubject } from "@toolmesh/proto";
import { checkDescription, checkIssuedId } from "./validation.js";

/** Bounds of a rate limit an admin writes. */
export const rateLimitBounds = {
  /** Beyond this a limit protects nothing a Dispatcher could sustain anyway. */
  maxRequestsPerSecond: 1_000_000,
  maxBurst: 1_000_000,
  /** How many limits the bucket holds; every Dispatcher keeps them all in memory. */
  maxLimits: 10_000,
  /** Ids are `<subject>.<escaped target>`; a target escapes to at most 3 bytes a byte. */
  maxIdLength: 400,
} as const;

const SUBJECT_WORD: Record<
  Exclude<RateLimitSubject, RateLimitSubject.UNSPECIFIED>,
  RateLimitKind
> = {
  [RateLimitSubject.AGENT]: "agent",
  [RateLimitSubject.USER]: "user",
  [RateLimitSubject.TOOL]: "tool",
  [RateLimitSubject.GRANT]: "grant",
};

/** The id (and KV key suffix) of a limit: one limit per subject and target. */
export function limitIdOf(spec: RateLimitSpec): string {
  return rateLimitId(SUBJECT_WORD[spec.subject as keyof typeof SUBJECT_WORD], spec.target);
}

/** Validates a rate limit an admin writes; INVALID_ARGUMENT naming the first bad field. */
export function validateRateLimitSpec(spec: RateLimitSpec | undefined): RateLimitSpec {
  if (!spec) throw invalidField("limit", "is required");
  switch (spec.subject) {
    case RateLimitSubject.AGENT:
    case RateLimitSubject.USER:
      checkPrincipalId("limit.target", spec.target, false);
      break;
    case RateLimitSubject.TOOL:
      checkToolName("limit.target", spec.target);
      break;
    case RateLimitSubject.GRANT:
      checkIssuedId("limit.target", spec.target);
      break;
    default:
      throw invalidField("limit.subject", "must be AGENT, USER, TOOL or GRANT");
  }
  const rps = spec.requestsPerSecond;
  if (!Number.isFinite(rps) || rps < 0 || rps > rateLimitBounds.maxRequestsPerSecond)
    throw invalidField(
      "limit.requests_per_second",
      `must be between 0 (no per-second limit) and ${rateLimitBounds.maxRequestsPerSecond}`,
    );
  if (spec.burst > rateLimitBounds.maxBurst)
    throw invalidField("limit.burst", `must be at most ${rateLimitBounds.maxBurst}`);
  if (rps === 0 && spec.burst !== 0)
    throw invalidField("limit.burst", "needs requests_per_second: a burst is the bucket's size");
  if (rps === 0 && spec.callsPerDay === 0)
    throw invalidField(
      "limit",
      "limits nothing: set requests_per_second, calls_per_day or both (DeleteRateLimit removes a limit)",
    );
  checkDescription("limit.description", spec.description);
  return spec;
}

/** Checks a rate limit id a caller names. */
export function checkRateLimitId(field: string, id: string): void {
  if (id === "") throw invalidField(field, "must not be empty");
  if (
    id.length > rateLimitBounds.maxIdLength ||
    !/^(agent|user|tool|grant)\.[A-Za-z0-9_=-]+$/.test(id)
  )
    throw invalidField(
      field,
      "is not a rate limit id; ids look like agent.planner (see ListRateLimits)",
    );
}
