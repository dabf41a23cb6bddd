import type { Logger } from "@toolmesh/log";
import { buckets, FollowedBucket, followRegistryTools } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import {
  OAuthConnectionSchema,
  OAuthProviderSchema,
  type RateLimitSchema,
  SecretSchema,
} from "@toolmesh/proto";
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
  /** The vault's index (names, scopes, versions; never values), from the permission bucket. */
  vault: {
    secrets: FollowedBucket<typeof SecretSchema>;
    providers: FollowedBucket<typeof OAuthProviderSchema>;
    connections: FollowedBucket<typeof OAuthConnectionSchema>;
  };
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
  const follow = <
    D extends typeof SecretSchema | typeof OAuthProviderSchema | typeof OAuthConnectionSchema,
  >(
    prefix: string,
    schema: D,
  ) =>
    new FollowedBucket({
      nc,
      bucket: buckets.permission.name,
      prefix,
      schema,
      log,
      meanwhile: "tools that name secrets are refused until the Permission service creates it",
      readyMessage: `vault index (${prefix}) loaded`,
    });
  const vault = {
    secrets: follow(buckets.permission.secretPrefix, SecretSchema),
    providers: follow(buckets.permission.oauthProviderPrefix, OAuthProviderSchema),
    connections: follow(buckets.permission.connectionPrefix, OAuthConnectionSchema),
  };
  const unwatch = watchSnapshotMetrics({ registry: tools, permission: policy.grants });
  return {
    tools,
    policy,
    limits,
    vault,
    stop() {
      vault.secrets.stop();
      vault.providers.stop();
      vault.connections.stop();
      unwatch();
      tools.stop();
      policy.stop();
      limits.stop();
    },
  };
}
