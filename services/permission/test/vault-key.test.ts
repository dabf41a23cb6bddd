import { createLogger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import { newVaultKey, parseVaultKey, VaultCipher } from "@toolmesh/vault";
import { describe, expect, it } from "vitest";
import { MemorySealedBucket, Vault, VaultKeyError } from "../src/vault-store.js";

const log = createLogger("vault-key-test", "silent");
const key = () => parseVaultKey(newVaultKey(), "a test key");

// The vault key: what a wrong one does, and a rotation with the previous one.
describe("vault key", () => {
  it("refuses to open a vault sealed with another key, naming both key ids and how to rotate", async () => {
    const bucket = new MemorySealedBucket();
    const first = new VaultCipher(key());
    const vault = await Vault.open(bucket, first, log);
    await vault.write(buckets.vault.valueKey("a"), new TextEncoder().encode("s3cret"));
    const other = new VaultCipher(key());
    const error = await Vault.open(bucket, other, log).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VaultKeyError);
    expect((error as Error).message).toContain(`key id ${other.keyId}`);
    expect((error as Error).message).toContain(`sealed with key id ${first.keyId}`);
    expect((error as Error).message).toContain("TOOLMESH_VAULT_PREVIOUS_KEY");
    expect((error as Error).message).not.toContain("s3cret");
  });

  it("re-encrypts every value in place with the new key when started with the previous one", async () => {
    const bucket = new MemorySealedBucket();
    const oldKey = key();
    const vault = await Vault.open(bucket, new VaultCipher(oldKey), log);
    for (const id of ["a", "b", "c"])
      await vault.write(buckets.vault.valueKey(id), new TextEncoder().encode(`value-${id}`));
    const newKey = key();
    const rotated = await Vault.open(bucket, new VaultCipher(newKey, oldKey), log);
    for (const [k, entry] of bucket.entries)
      expect(VaultCipher.keyIdOf(entry.value), k).toBe(rotated.cipher.keyId);
    // The new key alone now opens everything; the old one no longer does.
    const after = await Vault.open(bucket, new VaultCipher(newKey), log);
    expect(new TextDecoder().decode(await after.read(buckets.vault.valueKey("b")))).toBe("value-b");
    await expect(Vault.open(bucket, new VaultCipher(oldKey), log)).rejects.toBeInstanceOf(
      VaultKeyError,
    );
  });

  it("stores nothing in the clear and binds each value to its key", async () => {
    const bucket = new MemorySealedBucket();
    const vault = await Vault.open(bucket, new VaultCipher(key()), log);
    await vault.write(buckets.vault.valueKey("a"), new TextEncoder().encode("plain-text-value"));
    for (const entry of bucket.entries.values())
      expect(Buffer.from(entry.value).includes("plain-text-value")).toBe(false);
    // A sealed value moved under another key does not open.
    const sealed = bucket.entries.get(buckets.vault.valueKey("a"));
    if (sealed) bucket.entries.set(buckets.vault.valueKey("b"), sealed);
    await expect(vault.read(buckets.vault.valueKey("b"))).rejects.toThrow("changed at rest");
  });

  it("says what a vault key must look like, never echoing it", () => {
    expect(() => parseVaultKey("too-short-key", "TOOLMESH_VAULT_KEY")).toThrow(
      /TOOLMESH_VAULT_KEY is not a vault key: expected 32 random bytes as base64/,
    );
    expect(() => parseVaultKey("too-short-key", "TOOLMESH_VAULT_KEY")).not.toThrow(/too-short/);
  });
});
