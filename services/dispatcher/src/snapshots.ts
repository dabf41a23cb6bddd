import type { Logger } from "@toolmesh/log";
import { followRegistryTools } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import type { NatsConnection } from "nats";
import type { PermissionGate } from "./call-checks.js";
import { watchSnapshotMetrics } from "./call-telemetry.js";
import type { ToolSource } from "./tool-catalog.js";

/** The registry's tools and the grants, read from their owners' KV buckets. */
export interface Snapshots {
  tools: ToolSource;
  policy: PermissionGate;
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
  const unwatch = watchSnapshotMetrics({ registry: tools, permission: policy.grants });
  return {
    tools,
    policy,
    stop() {
      unwatch();
      tools.stop();
      policy.stop();
    },
  };
}
