import { clone } from "@bufbuild/protobuf";
import { buckets, KvConflictError, MemorySnapshot } from "@toolmesh/nats";
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
import type { BootstrapStep, PermissionStore } from "./store.js";
import { MemoryVaultIndex } from "./vault-index.js";

/**
 * Grants and API keys in memory, with the KV store's semantics (keys as in the bucket, writes
 * that refuse a taken id, revocation kept as a flag), for handler and in-process server tests.
 */
export class MemoryPermissionStore implements PermissionStore {
  private readonly grants = new MemorySnapshot(GrantSchema);
  readonly policy = new PolicySnapshot(this.grants);
  readonly keys = new MemorySnapshot(ApiKeyRecordSchema);
  readonly rateLimits = new MemorySnapshot(RateLimitSchema);
  readonly budgets = new MemorySnapshot(BudgetSchema);
  readonly vaultIndex = new MemoryVaultIndex();
  private readonly bootstrapped = new Set<BootstrapStep>();

  getGrant(id: string): Grant | undefined {
    return this.grants.get(buckets.permission.grantKey(id));
  }

  getKey(id: string): ApiKeyRecord | undefined {
    return this.keys.get(buckets.permission.apiKeyKey(id));
  }

  async createGrant(grant: Grant): Promise<void> {
    const key = buckets.permission.grantKey(grant.id);
    if (this.grants.get(key)) throw new KvConflictError(`wrong last sequence: ${key} exists`);
    // A copy, as the bucket would hold: the caller's object may change after the write.
    this.grants.put(key, clone(GrantSchema, grant));
  }

  async deleteGrant(id: string): Promise<boolean> {
    return this.grants.delete(buckets.permission.grantKey(id));
  }

  async updateGrant(
    id: string,
    expected: bigint,
    next: (current: Grant) => Grant,
  ): Promise<Grant | { missing: true } | { currentRevision: bigint }> {
    const key = buckets.permission.grantKey(id);
    const current = this.grants.get(key);
    if (!current) return { missing: true };
    if (current.revision !== expected) return { currentRevision: current.revision };
    const grant = clone(GrantSchema, next(current));
    this.grants.put(key, grant);
    return grant;
  }

  async putRateLimit(limit: RateLimit): Promise<void> {
    this.rateLimits.put(buckets.permission.rateLimitKey(limit.id), clone(RateLimitSchema, limit));
  }

  async deleteRateLimit(id: string): Promise<boolean> {
    return this.rateLimits.delete(buckets.permission.rateLimitKey(id));
  }

  async putBudget(budget: Budget): Promise<void> {
    this.budgets.put(buckets.permission.budgetKey(budget.id), clone(BudgetSchema, budget));
  }

  async deleteBudget(id: string): Promise<boolean> {
    return this.budgets.delete(buckets.permission.budgetKey(id));
  }

  async createKey(record: ApiKeyRecord): Promise<void> {
    const key = buckets.permission.apiKeyKey(record.apiKey?.id ?? "");
    if (this.keys.get(key)) throw new KvConflictError(`wrong last sequence: ${key} exists`);
    this.keys.put(key, clone(ApiKeyRecordSchema, record));
  }

  async revokeKey(id: string): Promise<ApiKey | undefined> {
    const key = buckets.permission.apiKeyKey(id);
    const stored = this.keys.get(key);
    if (!stored?.apiKey) return undefined;
    if (stored.apiKey.revoked) return stored.apiKey;
    const record = clone(ApiKeyRecordSchema, stored);
    if (record.apiKey) record.apiKey.revoked = true;
    this.keys.put(key, record);
    return record.apiKey;
  }

  async claimBootstrap(step: BootstrapStep): Promise<boolean> {
    if (this.bootstrapped.has(step)) return false;
    this.bootstrapped.add(step);
    return true;
  }

  stop(): void {}
}
