import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** AES-256-GCM: a 32-byte key, a 12-byte nonce per value, a 16-byte tag. */
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_BYTES = 8;
/** The first byte of every sealed value: the format, so a later one can be told apart. */
const FORMAT = 1;

/** Raised when a sealed value does not open: another key, or bytes changed at rest. */
export class VaultSealError extends Error {
  override name = "VaultSealError";
}

/** The id of a key as sealed values name it: 16 hex digits of a hash, never the key itself. */
export function vaultKeyId(key: Uint8Array): string {
  return createHash("sha256")
    .update("toolmesh vault key\n")
    .update(key)
    .digest()
    .subarray(0, KEY_ID_BYTES)
    .toString("hex");
}

/**
 * Reads a vault key as configured: 32 bytes written as base64 (44 characters) or hex (64).
 * Throws naming where it came from, never its value.
 */
export function parseVaultKey(text: string, from: string): Uint8Array {
  const trimmed = text.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) key = Buffer.from(trimmed, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) key = Buffer.from(trimmed, "base64");
  if (key?.length !== KEY_BYTES)
    throw new VaultSealError(
      `${from} is not a vault key: expected 32 random bytes as base64 (44 characters) or hex (64); make one with: openssl rand -base64 32`,
    );
  return new Uint8Array(key);
}

/** A new random vault key, as base64 (what a fresh stack writes to its key file). */
export function newVaultKey(): string {
  return randomBytes(KEY_BYTES).toString("base64");
}

/**
 * The keys of a vault: the current one seals, and opens with the previous one too while values
 * are re-encrypted after a rotation. `aad` binds a value to where it is stored (its bucket key),
 * so a sealed value moved to another key does not open.
 */
export class VaultCipher {
  readonly keyId: string;
  readonly previousKeyId: string | undefined;

  constructor(
    private readonly key: Uint8Array,
    private readonly previous?: Uint8Array,
  ) {
    if (key.length !== KEY_BYTES) throw new VaultSealError("a vault key is 32 bytes");
    this.keyId = vaultKeyId(key);
    this.previousKeyId = previous ? vaultKeyId(previous) : undefined;
  }

  /** Seals plaintext with the current key: format, key id, nonce, ciphertext, tag. */
  seal(plaintext: Uint8Array, aad: string): Uint8Array {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(Buffer.from(aad, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return new Uint8Array(
      Buffer.concat([
        Buffer.from([FORMAT]),
        Buffer.from(this.keyId, "hex"),
        nonce,
        body,
        cipher.getAuthTag(),
      ]),
    );
  }

  /** The key id a sealed value names (without opening it). */
  static keyIdOf(sealed: Uint8Array): string {
    if (sealed.length < 1 + KEY_ID_BYTES + NONCE_BYTES + TAG_BYTES || sealed[0] !== FORMAT)
      throw new VaultSealError("not a sealed vault value");
    return Buffer.from(sealed.subarray(1, 1 + KEY_ID_BYTES)).toString("hex");
  }

  /** Opens a value sealed with the current or the previous key; VaultSealError otherwise. */
  open(sealed: Uint8Array, aad: string): Uint8Array {
    const keyId = VaultCipher.keyIdOf(sealed);
    const key =
      keyId === this.keyId ? this.key : keyId === this.previousKeyId ? this.previous : undefined;
    if (!key)
      throw new VaultSealError(
        `sealed with key ${keyId}, which is neither the vault key (${this.keyId}) nor the previous one${this.previousKeyId ? ` (${this.previousKeyId})` : ""}`,
      );
    const at = 1 + KEY_ID_BYTES;
    const nonce = sealed.subarray(at, at + NONCE_BYTES);
    const body = sealed.subarray(at + NONCE_BYTES, sealed.length - TAG_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", key, nonce);
    decipher.setAAD(Buffer.from(aad, "utf8"));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    try {
      return new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
    } catch (error) {
      throw new VaultSealError(`a value sealed with key ${keyId} does not open: changed at rest`, {
        cause: error,
      });
    }
  }

  /** True when a value is sealed with the current key (a rotation has nothing left to do). */
  isCurrent(sealed: Uint8Array): boolean {
    return VaultCipher.keyIdOf(sealed) === this.keyId;
  }
}
