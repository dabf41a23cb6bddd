import type { Logger } from "@toolmesh/log";
import { buckets, FollowedBucket, followRegistryTools } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import {
  type BudgetSchema,
  OAuthConnectionSchema,
  OAuthProviderSchema,
  type RateLimitSchema,
  SecretSchema,
  type StoredSpendSchema,
} from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import { followBudgets, followSpend } from "./budget-ledger.js";
import type { PermissionGate } from "./permission-gate.js";
import { followRateLimits } from "./rate-limits.js";
import { watchSnapshotMetrics } from "./snapshot-metrics.js";
import type { ToolSource } from "./tool-catalog.js";

/**
 * The registry's tools, the grants, the rate limits and budgets, and the spend against budgets,
 * read from their owners' KV buckets.
 */
export interface Snapshots {
  tools: ToolSource;
  policy: PermissionGate;
  limits: FollowedBucket<typeof RateLimitSchema>;
  budgets: FollowedBucket<typeof BudgetSchema>;
  spend: FollowedBucket<typeof StoredSpendSchema>;
  /** The vault's index (names, scopes, versions; never values), from the permission bucket. */
  vault: {
    secrets: FollowedBucket<typeof SecretSchema>;
    providers: FollowedBucket<typeof OAuthProviderSchema>;
    connections: FollowedBucket<typeof OAuthConnectionSchema>;
  };
  stop(): void;
}

/**
 * The vault's index in the permission bucket — secrets, OAuth providers and users' connections,
 * never a value — as the Dispatcher follows it to know which secrets a call needs.
 */
export function followVault(nc: NatsConnection, log: Logger): Snapshots["vault"] {
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
  return {
    secrets: follow(buckets.permission.secretPrefix, SecretSchema),
    providers: follow(buckets.permission.oauthProviderPrefix, OAuthProviderSchema),
    connections: follow(buckets.permission.connectionPrefix, OAuthConnectionSchema),
  };
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
  const budgets = followBudgets(nc, log);
  const spend = followSpend(nc, log);
  const vault = followVault(nc, log);
  const unwatch = watchSnapshotMetrics({ registry: tools, permission: policy.grants });
  return {
    tools,
    policy,
    limits,
    budgets,
    spend,
    vault,
    stop() {
      vault.secrets.stop();
      vault.providers.stop();
      vault.connections.stop();
      unwatch();
      tools.stop();
      policy.stop();
      limits.stop();
      budgets.stop();
      spend.stop();
    },
  };
}

/**
 * Resolves once the tools, the grants, the rate limits and budgets have loaded, or after `timeoutMs`:
 * the Dispatcher reports SERVING only then, so a caller that waited for its health is not refused
 * "not loaded yet" by a process still reading its buckets. Past the time it serves anyway and
 * fails closed per call, as when an owning service is not running yet.
 */
export async function snapshotsLoaded(
  snapshots: Snapshots,
  log: Logger,
  timeoutMs: number,
): Promise<void> {
  const ready = () =>
    snapshots.tools.isReady &&
    snapshots.policy.isReady &&
    snapshots.limits.isReady &&
    snapshots.budgets.isReady;
  const until = Date.now() + timeoutMs;
  // The snapshots signal no "loaded" event of their own; their first load takes milliseconds.
  while (!ready() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!ready())
    log.warn(
      {
        registry: snapshots.tools.isReady,
        permission: snapshots.policy.isReady,
        limits: snapshots.limits.isReady,
        budgets: snapshots.budgets.isReady,
      },
      "serving before every snapshot loaded; calls fail closed until they do",
    );
}
