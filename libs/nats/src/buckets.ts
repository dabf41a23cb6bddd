import type { Logger } from "@toolmesh/log";
import {
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type KV,
  type KvOptions,
  nanos,
  type StreamConfig,
} from "nats";
import { type BusAccess, bucketNames, busAccess, isBusUser } from "./bus-access.js";
import { JetStreamApiCodes, jetStreamErrorCode, retrySetup } from "./jetstream-errors.js";
import { ensureStream } from "./streams.js";

/**
 * The KV buckets and their key layout: a shared contract, because the owner writes a bucket and
 * other services keep read-only snapshots of it through a watch. Values are binary Protobuf.
 */
export const buckets = {
  /** Owned by the Registry: `tools.<name>` → registry.v1.Tool, `groups.<name>` → registry.v1.Group. */
  registry: {
    name: bucketNames.registry,
    toolKey: (name: string) => `tools.${name}`,
    groupKey: (name: string) => `groups.${name}`,
    toolPrefix: "tools.>",
    groupPrefix: "groups.>",
  },
  /**
   * Owned by Permission: `grants.<id>` → permission.v1.Grant, `keys.<id>` → permission.v1.ApiKeyRecord,
   * `meta.admin_bootstrapped` → empty, set once the first admin key exists.
   */
  permission: {
    name: bucketNames.permission,
    grantKey: (id: string) => `grants.${id}`,
    apiKeyKey: (id: string) => `keys.${id}`,
    grantPrefix: "grants.>",
    apiKeyPrefix: "keys.>",
    /** Rate limits by id (`<subject>.<escaped target>`). */
    rateLimitKey: (id: string) => `limits.${id}`,
    rateLimitPrefix: "limits.>",
    /** Budgets by id (`<subject>.<escaped target>.<day|month>`). */
    budgetKey: (id: string) => `budgets.${id}`,
    budgetPrefix: "budgets.>",
    /** What the vault tells about a secret (permission.v1.Secret, never its value), by id. */
    secretKey: (id: string) => `secrets.${id}`,
    secretPrefix: "secrets.>",
    /** OAuth upstreams (permission.v1.OAuthProvider, never their client secret), by name. */
    oauthProviderKey: (name: string) => `oauth.${name}`,
    oauthProviderPrefix: "oauth.>",
    /** Users' connections to upstreams (permission.v1.OAuthConnection, never tokens), by id. */
    connectionKey: (id: string) => `connections.${id}`,
    connectionPrefix: "connections.>",
    /** JWT signing keys' public halves (permission.v1.SigningKey), by kid. */
    signingKeyKey: (kid: string) => `signing.${kid}`,
    signingKeyPrefix: "signing.>",
  },
  /**
   * Owned by Callback: `hours.…` → callback.v1.StoredUsage (its usage store), and
   * `spend.<budget id>.<period>` → callback.v1.StoredSpend, which the Dispatchers follow to
   * enforce budgets.
   */
  usage: {
    name: bucketNames.usage,
    spendKey: (budget: string, period: string) => `spend.${budget}.${period}`,
    spendPrefix: "spend.>",
  },
  /**
   * Owned and read by Permission alone; every value sealed with the vault key (libs/vault
   * VaultCipher, the bucket key as associated data): `values.<secret id>` → the secret's value,
   * `clients.<provider>` → an upstream's client secret, `tokens.<connection id>` → a user's
   * tokens of an upstream, `signing.<kid>` → a signing key's private half, `pending.<state>` →
   * an authorization under way (PKCE verifier), `meta.key` → which key the vault is sealed with.
   */
  vault: {
    name: bucketNames.vault,
    valueKey: (id: string) => `values.${id}`,
    clientSecretKey: (provider: string) => `clients.${provider}`,
    tokensKey: (connectionId: string) => `tokens.${connectionId}`,
    signingKey: (kid: string) => `signing.${kid}`,
    pendingKey: (state: string) => `pending.${state}`,
    pendingPrefix: "pending.>",
    metaKey: "meta.key",
  },
  /**
   * Owned by the Dispatchers together: `instances.<id>` → the time of that instance's last
   * heartbeat (decimal epoch ms), so a sweeper can tell a live Dispatcher from a vanished one.
   */
  dispatchers: {
    name: bucketNames.dispatchers,
    instanceKey: (id: string) => `instances.${id}`,
    instancePrefix: "instances.>",
    /** A heartbeat's value: the epoch ms of the beat. */
    beat: (ms: number) => String(ms),
    /** The epoch ms a heartbeat value holds, or undefined for none (or not a beat). */
    beatTime: (entry: { operation: string; string(): string } | null): number | undefined => {
      if (entry?.operation !== "PUT") return undefined;
      const at = Number(entry.string());
      return Number.isFinite(at) ? at : undefined;
    },
  },
  /**
   * Owned by Audit's chain writer: `log.hold` → audit.v1.AuditLogHold, whether appends to the
   * audit log wait for the archive or a consumer of the log, and which.
   */
  audit: {
    name: bucketNames.audit,
    logHoldKey: "log.hold",
  },
} as const;

/**
 * Byte limits of the KV buckets this applies (docs/configuration.md, retention and limits); the
 * Callback service sets its own bucket's limits from its configuration.
 */
export type BucketBytes = Partial<Record<keyof typeof bucketNames, number>>;

/**
 * Gives the buckets a process owns their byte limit. The owner creates its bucket with its own
 * history and TTL; this only adds max_bytes, so a full bucket refuses writes (KV buckets discard
 * new) instead of growing without bound. Runs after the service opened its buckets.
 */
export async function applyBucketLimits(options: {
  jsm: JetStreamManager;
  user: string;
  maxBytes: BucketBytes;
  log: Logger;
}): Promise<void> {
  const { jsm, user, maxBytes, log } = options;
  if (!isBusUser(user)) return;
  const access: BusAccess = busAccess[user];
  for (const key of access.ownsBuckets) {
    const stream = `KV_${bucketNames[key]}`;
    const limit = maxBytes[key];
    if (limit === undefined) continue;
    try {
      const { config } = await jsm.streams.info(stream);
      if (config.max_bytes !== limit) {
        await jsm.streams.update(stream, { ...config, max_bytes: limit });
        log.info({ bucket: bucketNames[key], max_bytes: limit }, "bucket limit set");
      }
    } catch (error) {
      // A service that opens its bucket lazily has none yet; it gets the limit at its next start.
      if (jetStreamErrorCode(error) !== JetStreamApiCodes.StreamNotFound) throw error;
    }
  }
}

/** How long a bucket's keys live and how much it may hold. */
export interface BucketRetention {
  replicas: number;
  /** Every key expires this long after its last write. */
  ttlMs: number;
  /** A byte limit past which the oldest keys go first; unset leaves the bucket's own. */
  maxBytes?: number;
  /**
   * Writes may carry their own TTL (a `Nats-TTL` header, nats-server 2.11+), shorter than the
   * bucket's: once set on a bucket, nats-server does not allow it to be turned off.
   */
  messageTtl?: boolean;
}

/**
 * Opens (or creates, or binds) a KV bucket: `js.views.kv`, tried again while no leader answers,
 * as a cluster that has just started may not have elected the bucket's stream leader yet.
 */
export function openKv(
  js: JetStreamClient,
  name: string,
  options: Partial<KvOptions>,
): Promise<KV> {
  return retrySetup(() => js.views.kv(name, options));
}

/**
 * Opens (or creates) a KV bucket of one value per key whose keys expire `ttlMs` after their last
 * write. views.kv leaves an existing bucket as it was; retention is configuration, so the age
 * (and the byte limit, dropping the oldest keys) is applied to an existing bucket too.
 */
export async function openBucket(
  js: JetStreamClient,
  jsm: JetStreamManager,
  name: string,
  retention: BucketRetention,
): Promise<KV> {
  const kv = await openKv(js, name, {
    history: 1,
    replicas: retention.replicas,
    ttl: retention.ttlMs,
  });
  const limits: Partial<StreamConfig> = { name: `KV_${name}`, max_age: nanos(retention.ttlMs) };
  if (retention.maxBytes !== undefined) {
    limits.max_bytes = retention.maxBytes;
    limits.discard = DiscardPolicy.Old;
  }
  // nats.js 2.29 does not know the field; nats-server 2.11+ does.
  if (retention.messageTtl) (limits as Record<string, unknown>).allow_msg_ttl = true;
  await retrySetup(() => ensureStream(jsm, limits));
  return kv;
}
