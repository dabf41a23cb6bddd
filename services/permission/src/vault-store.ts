import type { Logger } from "@toolmesh/log";
import {
  buckets,
  compareAndSet,
  KvConflictError,
  openKv,
  retrySetup,
  updateWithRetry,
} from "@toolmesh/nats";
import { VaultCipher, VaultSealError } from "@toolmesh/vault";
import type { KV, NatsConnection } from "nats";

/** The bytes of the vault's key check: what `meta.key` holds, sealed. */
const KEY_CHECK = new TextEncoder().encode("toolmesh vault");

/** Raised when the configured key cannot open the vault: Permission refuses to start. */
export class VaultKeyError extends Error {
  override name = "VaultKeyError";
}

/** Where sealed values live: the `toolmesh-vault` bucket, or a map in handler tests. */
export interface SealedBucket {
  get(key: string): Promise<{ value: Uint8Array; revision: number } | undefined>;
  /**
   * Writes a value and gives the revision it is at; with `revision`, only if the key is still at
   * it (KvConflictError otherwise).
   */
  put(key: string, value: Uint8Array, revision?: number): Promise<number>;
  /** Removes a key and its history. */
  purge(key: string): Promise<void>;
  /** The keys, or those a filter such as `pending.>` matches. */
  keys(filter?: string): Promise<string[]>;
}

/**
 * The vault's sealed values: every value is sealed with the vault key (AES-256-GCM, its bucket
 * key as associated data) before it is written, and opened only here. Only Permission reads
 * the bucket (libs/nats bus-access.ts).
 */
export class Vault {
  constructor(
    private readonly bucket: SealedBucket,
    readonly cipher: VaultCipher,
  ) {}

  /**
   * Opens the vault with the configured keys: a fresh vault records which key seals it; a vault
   * sealed with the previous key is re-encrypted in place with the new one, its key check last,
   * so a rotation that stops half-way resumes at the next start; any other key refuses to start.
   */
  static async open(bucket: SealedBucket, cipher: VaultCipher, log: Logger): Promise<Vault> {
    const vault = new Vault(bucket, cipher);
    // Tried again while no leader answers: Permission opens the vault as the cluster starts.
    const meta = await retrySetup(() => bucket.get(buckets.vault.metaKey));
    if (meta) {
      const sealedWith = VaultCipher.keyIdOf(meta.value);
      try {
        cipher.open(meta.value, buckets.vault.metaKey);
      } catch (error) {
        if (!(error instanceof VaultSealError)) throw error;
        throw new VaultKeyError(
          `the vault key (key id ${cipher.keyId}) does not open this vault, which is sealed with key id ${sealedWith}: start Permission with the key it was sealed with (TOOLMESH_VAULT_KEY or TOOLMESH_VAULT_KEY_FILE), or to rotate, with the new key there and the old one in TOOLMESH_VAULT_PREVIOUS_KEY (or _FILE)`,
        );
      }
      if (sealedWith === cipher.keyId) return vault;
    }
    const moved = await vault.reseal(log);
    const check = cipher.seal(KEY_CHECK, buckets.vault.metaKey);
    await retrySetup(() => bucket.put(buckets.vault.metaKey, check));
    if (meta || moved > 0)
      log.info(
        { key_id: cipher.keyId, previous_key_id: cipher.previousKeyId, values: moved },
        "vault re-encrypted with the new key; the previous key is no longer needed",
      );
    return vault;
  }

  /** Seals every value not sealed with the current key again with it; how many it sealed. */
  private async reseal(log: Logger): Promise<number> {
    let moved = 0;
    for (const key of await this.bucket.keys()) {
      if (key === buckets.vault.metaKey) continue;
      await updateWithRetry(`vault value ${key}`, async () => {
        const entry = await this.bucket.get(key);
        if (!entry || this.cipher.isCurrent(entry.value)) return;
        let plain: Uint8Array;
        try {
          plain = this.cipher.open(entry.value, key);
        } catch (error) {
          if (!(error instanceof VaultSealError)) throw error;
          throw new VaultKeyError(
            `vault value ${key}: ${error.message}; set TOOLMESH_VAULT_PREVIOUS_KEY to the key it was sealed with`,
          );
        }
        await compareAndSet(() =>
          this.bucket.put(key, this.cipher.seal(plain, key), entry.revision),
        );
        plain.fill(0);
        moved++;
      });
    }
    if (moved > 0) log.info({ values: moved }, "re-encrypted vault values");
    return moved;
  }

  /** The plaintext at a key, or undefined. */
  async read(key: string): Promise<Uint8Array | undefined> {
    const entry = await this.bucket.get(key);
    return entry ? this.cipher.open(entry.value, key) : undefined;
  }

  /** The plaintext and the revision it is at, for a compare-and-set write (a refresh). */
  async readAt(key: string): Promise<{ plain: Uint8Array; revision: number } | undefined> {
    const entry = await this.bucket.get(key);
    return entry
      ? { plain: this.cipher.open(entry.value, key), revision: entry.revision }
      : undefined;
  }

  /** Seals and writes; with `revision`, only if the key is still at it. The new revision. */
  write(key: string, plain: Uint8Array, revision?: number): Promise<number> {
    return this.bucket.put(key, this.cipher.seal(plain, key), revision);
  }

  remove(key: string): Promise<void> {
    return this.bucket.purge(key);
  }

  /** The keys a filter such as `pending.>` matches. */
  keys(filter: string): Promise<string[]> {
    return this.bucket.keys(filter);
  }
}

/** The `toolmesh-vault` bucket (history 1: a replaced value is gone, not kept behind the new one). */
export async function openVaultBucket(nc: NatsConnection, replicas: number): Promise<SealedBucket> {
  const kv: KV = await openKv(nc.jetstream(), buckets.vault.name, {
    history: 1,
    replicas,
    description:
      "toolmesh secret values, tokens and signing keys, sealed (read by Permission only)",
  });
  return {
    async get(key) {
      const entry = await kv.get(key);
      return entry?.operation === "PUT"
        ? { value: entry.value, revision: entry.revision }
        : undefined;
    },
    put(key, value, revision) {
      return revision === undefined ? kv.put(key, value) : kv.update(key, value, revision);
    },
    async purge(key) {
      await kv.purge(key);
    },
    async keys(filter) {
      const out: string[] = [];
      for await (const key of await kv.keys(filter)) out.push(key);
      return out;
    },
  };
}

/** Sealed values in memory, for handler tests. */
export class MemorySealedBucket implements SealedBucket {
  readonly entries = new Map<string, { value: Uint8Array; revision: number }>();
  private revision = 0;
  async get(key: string) {
    return this.entries.get(key);
  }
  async put(key: string, value: Uint8Array, revision?: number) {
    const current = this.entries.get(key);
    if (revision !== undefined && current?.revision !== revision)
      throw new KvConflictError(`wrong last sequence: ${key}`);
    this.entries.set(key, { value, revision: ++this.revision });
    return this.revision;
  }
  async purge(key: string) {
    this.entries.delete(key);
  }
  async keys(filter = ">") {
    const prefix = filter.replace(/>$/, "");
    return [...this.entries.keys()].filter((key) => key.startsWith(prefix));
  }
}
