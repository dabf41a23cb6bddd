import type { Logger } from "@toolmesh/log";
import { buckets, FollowedBucket, type SnapshotView } from "@toolmesh/nats";
import {
  type BucketShape,
  rateLimitId,
  refill,
  type TokenBucket,
  waitForToken,
} from "@toolmesh/policy";
import { type RateLimit, RateLimitSchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Escaped tool ids kept at most; past it the memo starts again (it only saves work). */
const MAX_TOOL_IDS = 10_000;

/** A call over a limit: which limit, and how long until it would pass. */
export interface OverLimit {
  limitId: string;
  /** `rate` (requests per second) or `day` (calls per UTC day). */
  kind: "rate" | "day";
  retryAfterMs: number;
  /** The limit as it applies on this Dispatcher, for the message. */
  allowed: number;
}

/** Who and what a call counts against. */
export interface LimitedCall {
  agentId: string;
  userId: string;
  tool: string;
  /** The allow grants that authorised the call. */
  grantIds: readonly string[];
}

/**
 * Enforces the rate limits Permission keeps under `limits.>` of its bucket, with counters local
 * to this Dispatcher: each of `replicas` Dispatchers allows 1/replicas of every rate and daily
 * quota (docs/security.md), so no call costs a NATS write. Memory is bounded by the number of
 * limits, never by calls: counters exist only for limits that exist.
 */
export class CallLimiter {
  private readonly rates = new Map<string, TokenBucket>();
  private readonly days = new Map<string, { day: number; calls: number }>();
  private readonly toolIds = new Map<string, string>();

  constructor(
    private readonly limits: SnapshotView<typeof RateLimitSchema>,
    private readonly replicas: number,
    private readonly now: () => number = Date.now,
  ) {
    limits.onChange((change) => {
      // A changed or deleted limit starts afresh: its old counters no longer describe it.
      const id = change.key.slice(change.key.indexOf(".") + 1);
      this.rates.delete(id);
      if (change.value === undefined) this.days.delete(id);
    });
  }

  get isReady(): boolean {
    return this.limits.isReady;
  }

  /**
   * Counts the call against every limit that applies, or returns the first it is over (and then
   * counts it against none, so a refused call costs no quota).
   */
  admit(call: LimitedCall): OverLimit | undefined {
    if (this.limits.size === 0) return undefined; // no limits at all: nothing to count
    const nowMs = this.now();
    const applying: RateLimit[] = [];
    for (const id of this.limitIds(call)) {
      const limit = this.limits.get(buckets.permission.rateLimitKey(id));
      if (limit?.spec) applying.push(limit);
    }
    if (applying.length === 0) return undefined;
    const day = Math.floor(nowMs / DAY_MS);
    const next = applying.map((limit) => ({
      limit,
      bucket: this.shape(limit)
        ? refill(this.rates.get(limit.id), this.shape(limit) as BucketShape, nowMs)
        : undefined,
      used: this.days.get(limit.id)?.day === day ? (this.days.get(limit.id)?.calls ?? 0) : 0,
    }));
    for (const { limit, bucket, used } of next) {
      const shape = this.shape(limit);
      if (bucket && shape) {
        const wait = waitForToken(bucket, shape);
        if (wait > 0)
          return { limitId: limit.id, kind: "rate", retryAfterMs: wait, allowed: shape.perSecond };
      }
      const quota = this.dailyQuota(limit);
      if (quota > 0 && used >= quota)
        return {
          limitId: limit.id,
          kind: "day",
          retryAfterMs: (day + 1) * DAY_MS - nowMs,
          allowed: quota,
        };
    }
    for (const { limit, bucket, used } of next) {
      if (bucket) this.rates.set(limit.id, { tokens: bucket.tokens - 1, updatedMs: nowMs });
      if (this.dailyQuota(limit) > 0) this.days.set(limit.id, { day, calls: used + 1 });
    }
    return undefined;
  }

  /** The ids of every limit that could apply to a call (as Permission derives them). */
  private limitIds(call: LimitedCall): string[] {
    // Tool names are few (the catalog) and dotted, so their escaped ids are kept.
    let toolId = this.toolIds.get(call.tool);
    if (toolId === undefined) {
      if (this.toolIds.size >= MAX_TOOL_IDS) this.toolIds.clear();
      toolId = rateLimitId("tool", call.tool);
      this.toolIds.set(call.tool, toolId);
    }
    const ids = [rateLimitId("agent", call.agentId), toolId];
    if (call.userId !== "") ids.push(rateLimitId("user", call.userId));
    for (const grant of call.grantIds) ids.push(rateLimitId("grant", grant));
    return ids;
  }

  /** The token bucket of a limit on this replica; undefined without a per-second limit. */
  private shape(limit: RateLimit): BucketShape | undefined {
    const spec = limit.spec;
    if (!spec || spec.requestsPerSecond <= 0) return undefined;
    const burst = spec.burst || Math.max(1, Math.ceil(spec.requestsPerSecond));
    return {
      capacity: Math.max(1, Math.floor(burst / this.replicas)),
      perSecond: spec.requestsPerSecond / this.replicas,
    };
  }

  private dailyQuota(limit: RateLimit): number {
    const perDay = limit.spec?.callsPerDay ?? 0;
    return perDay === 0 ? 0 : Math.max(1, Math.floor(perDay / this.replicas));
  }
}

/** The rate limits, followed from the Permission service's bucket like the grants. */
export function followRateLimits(
  nc: NatsConnection,
  log: Logger,
): FollowedBucket<typeof RateLimitSchema> {
  return new FollowedBucket({
    nc,
    bucket: buckets.permission.name,
    prefix: buckets.permission.rateLimitPrefix,
    schema: RateLimitSchema,
    log,
    meanwhile: "calls fail closed until the Permission service creates it",
    readyMessage: "rate limit snapshot loaded",
  });
}
