import type { Logger } from "@toolmesh/log";
import { type FollowedBucket, followRegistryTools } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import type { RateLimitSchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import type { PermissionGate } from "./permission-gate.js";
import { followRateLimits } from "./rate-limits.js";
import { watchSnapshotMetrics } from "./snapshot-metrics.js";
import type { ToolSource } from "./tool-catalog.js";

/** The registry's tools, the grants and the rate limits, read from their owners' KV buckets. */
export interface Snapshots {
  tools: ToolSource;
  policy: PermissionGate;
  limits: FollowedBucket<typeof RateLimitSchema>;
  stop(): void;
}

/**
 * Follows the registry and permission buckets. They belong to their services: until a bucket
 * exists and its snapshot has loaded, the matching side reports not ready and every call fails
 * closed with UNAVAILABLE.
 */
export function followSnapshots(nc: NatsConnection, log: Logger): Snapshots {
  const tools = followRegistryTools(nc, log, "calls fail closed until the Registry creates it");
  const policy = PolicySnapshot.following(
    nc,
    log,
    "calls fail closed until the Permission service creates it",
  );
  const limits = followRateLimits(nc, log);
  const unwatch = watchSnapshotMetrics({ registry: tools, permission: policy.grants });
  return {
    tools,
    policy,
    limits,
    stop() {
      unwatch();
      tools.stop();
      policy.stop();
      limits.stop();
    },
  };
}
