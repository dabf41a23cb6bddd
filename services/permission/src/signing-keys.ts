import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import { type SigningKey, SigningKeySchema, SigningKeyState } from "@toolmesh/proto";
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, SignJWT } from "jose";
import type { VaultIndex } from "./store.js";
import type { Vault } from "./vault-store.js";

/** A private key as jose imports it. */
type SigningKeyLike = Awaited<ReturnType<typeof importJWK>>;

/** The algorithm of toolmesh's signing keys. */
const ALGORITHM = "EdDSA";

/**
 * toolmesh's JWT signing keys: the private halves sealed in the vault, the public halves in the
 * permission bucket, where every service's verifier follows them. One key signs; the keys before
 * it keep verifying until retired.
 */
export class SigningKeys {
  private readonly privateKeys = new Map<string, SigningKeyLike>();

  constructor(
    private readonly index: VaultIndex,
    private readonly vault: Vault,
    private readonly now: () => number = Date.now,
  ) {}

  /** Makes a new key the one that signs; the one before it verifies until retired. */
  async add(by: Principal): Promise<SigningKey> {
    const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, {
      crv: "Ed25519",
      extractable: true,
    });
    const kid = randomBytes(8).toString("hex");
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALGORITHM, use: "sig" };
    await this.vault.write(
      buckets.vault.signingKey(kid),
      new TextEncoder().encode(JSON.stringify(await exportJWK(privateKey))),
    );
    const key = create(SigningKeySchema, {
      kid,
      algorithm: ALGORITHM,
      publicJwk: JSON.stringify(publicJwk),
      state: SigningKeyState.ACTIVE,
      createdAt: timestampFromMs(this.now()),
      createdBy: by.agentId,
    });
    for (const other of this.index.signingKeys.values()) {
      if (other.state === SigningKeyState.ACTIVE)
        await this.index.put(
          "signingKeys",
          buckets.permission.signingKeyKey(other.kid),
          create(SigningKeySchema, { ...other, state: SigningKeyState.VERIFYING }),
        );
    }
    await this.index.put("signingKeys", buckets.permission.signingKeyKey(kid), key);
    return key;
  }

  /** Stops a key verifying; the key that signs cannot be retired before another is added. */
  async retire(kid: string): Promise<SigningKey | undefined> {
    const key = this.index.signingKeys.get(buckets.permission.signingKeyKey(kid));
    if (!key) return undefined;
    if (key.state === SigningKeyState.ACTIVE)
      throw new ConnectError(
        `signing key ${kid} is the one that signs; add a new key first (AddSigningKey), then retire this one once the tokens it signed have expired`,
        Code.FailedPrecondition,
      );
    await this.index.delete("signingKeys", buckets.permission.signingKeyKey(kid));
    await this.vault.remove(buckets.vault.signingKey(kid));
    this.privateKeys.delete(kid);
    return key;
  }

  /** Every key, the one that signs first. */
  list(): SigningKey[] {
    return [...this.index.signingKeys.values()].sort(
      (a, b) => a.state - b.state || (a.kid < b.kid ? -1 : 1),
    );
  }

  /** The public halves as a JWKS document, for upstreams that verify toolmesh's tokens. */
  jwks(): { keys: JWK[] } {
    return { keys: this.list().map((k) => JSON.parse(k.publicJwk) as JWK) };
  }

  /** Signs claims with the active key; FAILED_PRECONDITION when there is none. */
  async sign(
    claims: JWTPayload,
    options: { issuer: string; audience: string; ttlSeconds: number },
  ): Promise<{ token: string; expiresAt: number }> {
    const active = this.list().find((k) => k.state === SigningKeyState.ACTIVE);
    if (!active)
      throw new ConnectError(
        "toolmesh has no signing key yet; an admin adds one with AddSigningKey (toolmesh signing-key add)",
        Code.FailedPrecondition,
      );
    const key = await this.privateKey(active.kid);
    const nowS = Math.floor(this.now() / 1000);
    const expiresAt = (nowS + options.ttlSeconds) * 1000;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM, kid: active.kid, typ: "JWT" })
      .setIssuer(options.issuer)
      .setAudience(options.audience)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + options.ttlSeconds)
      .setJti(randomBytes(12).toString("hex"))
      .sign(key);
    return { token, expiresAt };
  }

  private async privateKey(kid: string): Promise<SigningKeyLike> {
    let key = this.privateKeys.get(kid);
    if (!key) {
      const plain = await this.vault.read(buckets.vault.signingKey(kid));
      if (!plain)
        throw new ConnectError(
          `signing key ${kid} has no private half in the vault; add a new key (AddSigningKey)`,
          Code.FailedPrecondition,
        );
      key = await importJWK(JSON.parse(new TextDecoder().decode(plain)) as JWK, ALGORITHM);
      this.privateKeys.set(kid, key);
    }
    return key;
  }
}
