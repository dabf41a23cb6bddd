import type { SnapshotView } from "@toolmesh/nats";
import type { PolicySnapshot } from "@toolmesh/policy";
import type {
  ApiKey,
  ApiKeyRecord,
  ApiKeyRecordSchema,
  Budget,
  BudgetSchema,
  Grant,
  OAuthConnectionSchema,
  OAuthProviderSchema,
  RateLimit,
  RateLimitSchema,
  SecretSchema,
  SigningKeySchema,
} from "@toolmesh/proto";

/**
 * Where Permission keeps grants and API keys. Reads come from memory (`policy` and `keys` are
 * snapshots keyed as in the `toolmesh-permission` bucket); a write resolves once those
 * snapshots show it, so the caller's next read sees its own write.
 */
export interface PermissionStore {
  /** The grants, as every decision reads them. */
  readonly policy: PolicySnapshot;
  /** The API key records (salted hashes, never secrets), as the key verifier reads them. */
  readonly keys: SnapshotView<typeof ApiKeyRecordSchema>;
  /** The rate limits, keyed `limits.<id>` as the Dispatchers follow them. */
  readonly rateLimits: SnapshotView<typeof RateLimitSchema>;
  /** The budgets, keyed `budgets.<id>` as the Dispatchers follow them. */
  readonly budgets: SnapshotView<typeof BudgetSchema>;

  /** What the vault tells about secrets, upstreams, connections and signing keys: never values. */
  readonly vaultIndex: VaultIndex;

  getGrant(id: string): Grant | undefined;
  getKey(id: string): ApiKeyRecord | undefined;
  /** Stores a new grant; rejects when its id is taken. */
  createGrant(grant: Grant): Promise<void>;
  /** Deletes a grant; false when there is none with the id. */
  deleteGrant(id: string): Promise<boolean>;
  /**
   * Replaces a grant if its stored revision is `expected` (compare-and-set): the new grant, or
   * why not — no grant with the id, or the revision it is at.
   */
  updateGrant(
    id: string,
    expected: bigint,
    next: (current: Grant) => Grant,
  ): Promise<Grant | { missing: true } | { currentRevision: bigint }>;
  /** Creates or replaces a rate limit (one per subject and target). */
  putRateLimit(limit: RateLimit): Promise<void>;
  /** Deletes a rate limit; false when there is none with the id. */
  deleteRateLimit(id: string): Promise<boolean>;
  /** Creates or replaces a budget (one per subject, target and period). */
  putBudget(budget: Budget): Promise<void>;
  /** Deletes a budget; false when there is none with the id. */
  deleteBudget(id: string): Promise<boolean>;
  /** Stores a new key record; rejects when its id is taken. */
  createKey(record: ApiKeyRecord): Promise<void>;
  /** Marks a key revoked (again is a no-op); undefined when there is none with the id. */
  revokeKey(id: string): Promise<ApiKey | undefined>;
  /**
   * Claims a one-time bootstrap step (`admin`: the admin and service keys; `tool_agent`: the tool
   * agent's keys and grant); false when already claimed.
   */
  claimBootstrap(step: BootstrapStep): Promise<boolean>;
  stop(): void;
}

/** The bootstrap steps, each done once per bucket (a marker key `meta.<step>_bootstrapped`). */
export type BootstrapStep = "admin" | "tool_agent";

/**
 * The vault's public side, in the `toolmesh-permission` bucket every Dispatcher follows (names,
 * scopes, versions, expiries, public keys); the values are in the vault bucket only.
 */
export interface VaultIndex {
  readonly secrets: SnapshotView<typeof SecretSchema>;
  readonly providers: SnapshotView<typeof OAuthProviderSchema>;
  readonly connections: SnapshotView<typeof OAuthConnectionSchema>;
  readonly signingKeys: SnapshotView<typeof SigningKeySchema>;
  /** Writes one entry and resolves once this process's snapshot shows it. */
  put<K extends VaultIndexKind>(kind: K, key: string, value: VaultIndexValue<K>): Promise<void>;
  /** Deletes one entry; false when there was none. */
  delete(kind: VaultIndexKind, key: string): Promise<boolean>;
}

export type VaultIndexKind = "secrets" | "providers" | "connections" | "signingKeys";

/** The message each kind of index entry holds. */
export type VaultIndexValue<K extends VaultIndexKind> = NonNullable<
  ReturnType<VaultIndex[K]["get"]>
>;
