import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import type { ApiKeyRecord } from "@toolmesh/proto";
import { type Principal, principal } from "./principal.js";

/** Every API key token starts with this: `tmk_<id>_<secret>`. */
export const API_KEY_PREFIX = "tmk_";

/**
 * HMAC-SHA256 keyed with a random per-key salt. The secret is 32 random bytes (256 bits), so a
 * slow password hash would add no protection against guessing while costing every RPC of every
 * service; HMAC keeps verification at a few microseconds.
 */
export const API_KEY_HASH_ALGORITHM = "hmac-sha256";

const TOKEN_PATTERN = /^tmk_([a-f0-9]{16})_([A-Za-z0-9_-]{43})$/;

/** A freshly minted key: the public id, the token to hand out once, and what to store. */
export interface MintedApiKey {
  id: string;
  token: string;
  salt: string;
  hash: string;
}

/** Mints a key id and a secret of 32 random bytes, with its salt and hash. */
export function mintApiKey(): MintedApiKey {
  const id = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  const salt = randomBytes(16).toString("hex");
  return { id, token: `${API_KEY_PREFIX}${id}_${secret}`, salt, hash: hashSecret(secret, salt) };
}

/** The id and secret of a token, or undefined when it is not shaped like an API key. */
export function parseApiKeyToken(token: string): { id: string; secret: string } | undefined {
  const match = TOKEN_PATTERN.exec(token);
  return match ? { id: match[1] as string, secret: match[2] as string } : undefined;
}

/** True when the token looks like an API key at all (its prefix). */
export function isApiKeyToken(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

function hashSecret(secret: string, salt: string): string {
  return createHmac("sha256", Buffer.from(salt, "hex")).update(secret).digest("hex");
}

function rejected(why: string): ConnectError {
  return new ConnectError(`bearer token rejected: ${why}`, Code.Unauthenticated);
}

/**
 * Verifies API key tokens against a watched snapshot of `keys.>` in the permission bucket, so
 * a revocation reaches every service as fast as the watch delivers it. Fails closed (UNAVAILABLE)
 * until the snapshot is loaded.
 */
export function createApiKeyVerifier(
  keys: { readonly isReady: boolean; get(key: string): ApiKeyRecord | undefined },
  now: () => number = Date.now,
): (token: string) => Principal {
  return (token) => {
    const parsed = parseApiKeyToken(token);
    if (!parsed) throw rejected("malformed API key; expected tmk_<id>_<secret>");
    if (!keys.isReady) {
      throw new ConnectError(
        "API keys are not loaded yet on this server; retry shortly",
        Code.Unavailable,
      );
    }
    const record = keys.get(buckets.permission.apiKeyKey(parsed.id));
    const key = record?.apiKey;
    if (!record || !key) throw rejected("unknown API key");
    if (record.hashAlgorithm !== API_KEY_HASH_ALGORITHM) throw rejected("unknown API key");
    const expected = Buffer.from(record.hash, "hex");
    const actual = Buffer.from(hashSecret(parsed.secret, record.salt), "hex");
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual))
      throw rejected("unknown API key");
    if (key.revoked) throw rejected(`API key ${key.id} has been revoked`);
    if (key.expiresAt && timestampMs(key.expiresAt) <= now())
      throw rejected(`API key ${key.id} has expired`);
    return principal(key.agentId, [...key.roles], key.userId, key.id);
  };
}
