import { kvKeyToken } from "@toolmesh/nats";

/** A token bucket's state: tokens now, and when they were last counted. */
export interface TokenBucket {
  tokens: number;
  updatedMs: number;
}

/** A bucket's shape: it holds at most `capacity` tokens and earns `perSecond` back. */
export interface BucketShape {
  capacity: number;
  perSecond: number;
}

/** Tops a bucket up for the time passed (a new bucket starts full). */
export function refill(
  bucket: TokenBucket | undefined,
  shape: BucketShape,
  nowMs: number,
): TokenBucket {
  if (!bucket) return { tokens: shape.capacity, updatedMs: nowMs };
  const earned = (Math.max(0, nowMs - bucket.updatedMs) / 1000) * shape.perSecond;
  return { tokens: Math.min(shape.capacity, bucket.tokens + earned), updatedMs: nowMs };
}

/** How long until the bucket holds one token; 0 when it does. */
export function waitForToken(bucket: TokenBucket, shape: BucketShape): number {
  if (bucket.tokens >= 1) return 0;
  if (shape.perSecond <= 0) return Number.POSITIVE_INFINITY;
  return Math.ceil(((1 - bucket.tokens) / shape.perSecond) * 1000);
}

/** What a rate limit counts: the calls of an agent, a user, a tool or a grant. */
export type RateLimitKind = "agent" | "user" | "tool" | "grant";

/** A rate limit's id and key suffix in the permission bucket: one limit per kind and target. */
export function rateLimitId(kind: RateLimitKind, target: string): string {
  return `${kind}.${kvKeyToken(target)}`;
}
