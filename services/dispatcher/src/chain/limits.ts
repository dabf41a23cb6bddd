import { Code, ConnectError, retryLater } from "@toolmesh/errors";
import type { Decision, Principal } from "@toolmesh/proto";
import type { CallLimiter } from "../catalog/rate-limits.js";
import { Refusal } from "./refusal.js";

/**
 * Counts an authorised call against its rate limits; over one, it is refused with
 * RESOURCE_EXHAUSTED and a RetryInfo delay (and recorded as a refusal like any other).
 */
export function checkLimits(
  limiter: CallLimiter | undefined,
  principal: Principal,
  tool: string,
  decision: Decision,
): void {
  if (!limiter) return;
  if (!limiter.isReady)
    throw new Refusal(
      new ConnectError(
        "the dispatcher has not loaded the rate limits yet; retry in a moment",
        Code.Unavailable,
      ),
      "snapshot not ready",
    );
  const over = limiter.admit({
    agentId: principal.agentId,
    userId: principal.userId,
    tool,
    grantIds: decision.matchedGrantIds,
  });
  if (!over) return;
  const seconds = Math.ceil(over.retryAfterMs / 1000);
  const what =
    over.kind === "rate"
      ? `more than ${round(over.allowed)} calls a second`
      : `its daily quota of ${over.allowed} calls`;
  throw new Refusal(
    retryLater(
      `rate limit ${over.limitId} allows no more calls now (${what}); retry in ${seconds} s`,
      over.retryAfterMs,
    ),
    `over rate limit ${over.limitId} (${over.kind})`,
  );
}

const round = (n: number) => Math.round(n * 100) / 100;
