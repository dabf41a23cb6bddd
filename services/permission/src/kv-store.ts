import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  buckets,
  compareAndSet,
  KvConflictError,
  openKv,
  ReconnectingKvSnapshot,
  retryBetweenLeaders,
  type SnapshotChange,
  untilSnapshotShows,
  updateWithRetry,
} from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import {
  type ApiKey,
  type ApiKeyRecord,
  ApiKeyRecordSchema,
  type Budget,
  BudgetSchema,
  type Grant,
  GrantSchema,
  type RateLimit,
  RateLimitSchema,
} from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";
import type { BootstrapStep, PermissionStore } from "./store.js";
import { KvVaultIndex } from "./vault-index.js";

/** Marks that the admin and service keys were bootstrapped; created atomically by one replica. */
export const BOOTSTRAP_KEY = "meta.admin_bootstrapped";

/** The marker key of a bootstrap step. */
function bootstrapKey(step: BootstrapStep): string {
  return step === "admin" ? BOOTSTRAP_KEY : `meta.${step}_bootstrapped`;
}

/**
 * The `toolmesh-permission` bucket: grants and API keys, written here and read from watched
 * snapshots (the same snapshots every other service keeps).
 */
export class KvPermissionStore implements PermissionStore {
  readonly policy: PolicySnapshot & { start(): Promise<void> };
  readonly keys: ReconnectingKvSnapshot<typeof ApiKeyRecordSchema>;
  readonly rateLimits: ReconnectingKvSnapshot<typeof RateLimitSchema>;
  readonly budgets: ReconnectingKvSnapshot<typeof BudgetSchema>;
  readonly vaultIndex: KvVaultIndex;

  constructor(
    nc: NatsConnection,
    readonly kv: KV,
    private readonly log: Logger,
  ) {
    this.policy = PolicySnapshot.owned(nc, kv, log);
    this.keys = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.permission.apiKeyPrefix,
      ApiKeyRecordSchema,
      log,
    );
    this.rateLimits = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.permission.rateLimitPrefix,
      RateLimitSchema,
      log,
    );
    this.budgets = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.permission.budgetPrefix,
      BudgetSchema,
      log,
    );
    this.vaultIndex = new KvVaultIndex(nc, kv, log);
  }

  /** Creates the bucket if needed and loads both snapshots. */
  static async open(nc: NatsConnection, replicas: number, log: Logger): Promise<KvPermissionStore> {
    const kv = await openKv(nc.jetstream(), buckets.permission.name, {
      history: 5,
      replicas,
      description: "toolmesh grants and API keys (owned by the Permission service)",
    });
    const store = new KvPermissionStore(nc, kv, log);
    await Promise.all([
      store.policy.start(),
      store.keys.start(),
      store.rateLimits.start(),
      store.budgets.start(),
      store.vaultIndex.start(),
    ]);
    return store;
  }

  stop(): void {
    this.policy.stop();
    this.keys.stop();
    this.rateLimits.stop();
    this.budgets.stop();
    this.vaultIndex.stop();
  }

  getGrant(id: string): Grant | undefined {
    return this.policy.grants.get(buckets.permission.grantKey(id));
  }

  getKey(id: string): ApiKeyRecord | undefined {
    return this.keys.get(buckets.permission.apiKeyKey(id));
  }

  async createGrant(grant: Grant): Promise<void> {
    const key = buckets.permission.grantKey(grant.id);
    await this.kv.create(key, toBinary(GrantSchema, grant));
    await this.settle(this.policy.grants, () => this.policy.grants.get(key) !== undefined);
  }

  /** Deletes a grant; false when there is none with the id. */
  async deleteGrant(id: string): Promise<boolean> {
    const key = buckets.permission.grantKey(id);
    // Revoked or changed meanwhile: read it again.
    const deleted = await updateWithRetry(`grant "${id}"`, async () => {
      const entry = await this.kv.get(key);
      if (entry?.operation !== "PUT") return false;
      await compareAndSet(() => this.kv.delete(key, { previousSeq: entry.revision }));
      return true;
    });
    if (deleted)
      await this.settle(this.policy.grants, () => this.policy.grants.get(key) === undefined);
    return deleted;
  }

  async updateGrant(
    id: string,
    expected: bigint,
    next: (current: Grant) => Grant,
  ): Promise<Grant | { missing: true } | { currentRevision: bigint }> {
    const key = buckets.permission.grantKey(id);
    // Written meanwhile: compare again.
    const result = await updateWithRetry(`grant "${id}"`, async () => {
      const entry = await this.kv.get(key);
      if (entry?.operation !== "PUT") return { missing: true as const };
      const current = fromBinary(GrantSchema, entry.value);
      if (current.revision !== expected) return { currentRevision: current.revision };
      const grant = next(current);
      await compareAndSet(() => this.kv.update(key, toBinary(GrantSchema, grant), entry.revision));
      return grant;
    });
    if ("missing" in result || "currentRevision" in result) return result;
    await this.settle(
      this.policy.grants,
      () => this.policy.grants.get(key)?.revision === result.revision,
    );
    return result;
  }

  async putRateLimit(limit: RateLimit): Promise<void> {
    const key = buckets.permission.rateLimitKey(limit.id);
    await this.putEntry(this.rateLimits, key, toBinary(RateLimitSchema, limit), limit.updatedAt);
  }

  deleteRateLimit(id: string): Promise<boolean> {
    return this.deleteEntry(this.rateLimits, buckets.permission.rateLimitKey(id));
  }

  async putBudget(budget: Budget): Promise<void> {
    const key = buckets.permission.budgetKey(budget.id);
    await this.putEntry(this.budgets, key, toBinary(BudgetSchema, budget), budget.updatedAt);
  }

  deleteBudget(id: string): Promise<boolean> {
    return this.deleteEntry(this.budgets, buckets.permission.budgetKey(id));
  }

  /** Writes an admin entry stamped `updatedAt` and waits until its snapshot shows it. */
  private async putEntry(
    snapshot: ReconnectingKvSnapshot<typeof RateLimitSchema | typeof BudgetSchema>,
    key: string,
    value: Uint8Array,
    updatedAt: { seconds: bigint } | undefined,
  ): Promise<void> {
    await this.kv.put(key, value);
    const written = updatedAt?.seconds;
    await this.settle(snapshot, () => snapshot.get(key)?.updatedAt?.seconds === written);
  }

  /** Deletes an admin entry; false when there is none. */
  private async deleteEntry(
    snapshot: ReconnectingKvSnapshot<typeof RateLimitSchema | typeof BudgetSchema>,
    key: string,
  ): Promise<boolean> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== "PUT") return false;
    await this.kv.delete(key);
    await this.settle(snapshot, () => snapshot.get(key) === undefined);
    return true;
  }

  async createKey(record: ApiKeyRecord): Promise<void> {
    const id = record.apiKey?.id ?? "";
    const key = buckets.permission.apiKeyKey(id);
    await this.kv.create(key, toBinary(ApiKeyRecordSchema, record));
    await this.settle(this.keys, () => this.keys.get(key) !== undefined);
  }

  /** Marks a key revoked; undefined when there is none with the id. */
  async revokeKey(id: string): Promise<ApiKey | undefined> {
    const key = buckets.permission.apiKeyKey(id);
    // Changed under us: read it again.
    const revoked = await updateWithRetry(`API key "${id}"`, async () => {
      const entry = await this.kv.get(key);
      if (entry?.operation !== "PUT") return undefined;
      const record = fromBinary(ApiKeyRecordSchema, entry.value);
      if (!record.apiKey || record.apiKey.revoked) return record.apiKey;
      record.apiKey.revoked = true;
      await compareAndSet(() =>
        this.kv.update(key, toBinary(ApiKeyRecordSchema, record), entry.revision),
      );
      return record.apiKey;
    });
    if (revoked) await this.settle(this.keys, () => this.keys.get(key)?.apiKey?.revoked === true);
    return revoked;
  }

  /** Creates the bootstrap marker; false when another replica (or an earlier start) did. */
  async claimBootstrap(step: BootstrapStep): Promise<boolean> {
    try {
      // Refused with no responders (a leader election as the cluster starts) stored nothing.
      await retryBetweenLeaders(() =>
        compareAndSet(() => this.kv.create(bootstrapKey(step), new Uint8Array())),
      );
      return true;
    } catch (error) {
      if (error instanceof KvConflictError) return false;
      throw error;
    }
  }

  /** Waits until the watch shows a write, so the caller's next read sees it. */
  private settle(
    snapshot: { onChange(listener: (change: SnapshotChange<unknown>) => void): () => void },
    done: () => boolean,
  ): Promise<void> {
    return untilSnapshotShows(snapshot, done, this.log);
  }
}
