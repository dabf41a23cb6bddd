import { readFileSync } from "node:fs";
import { Code, ConnectError } from "@toolmesh/errors";
import { checkPrincipalId } from "@toolmesh/names";
import {
  createLocalJWKSet,
  importJWK,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  errors as joseErrors,
  jwtVerify,
} from "jose";
import { type Principal, principal } from "./principal.js";

export interface JwtSettings {
  /** HS256 shared secret; at least 32 bytes. */
  secret?: string;
  /** Path of a JWKS JSON file with public keys (RS256, ES256, EdDSA ...). */
  jwksFile?: string;
  issuer: string;
  audience: string;
  /** Claim naming the user the agent acts for. */
  userClaim: string;
  /** Claim carrying the roles, as an array of strings. */
  rolesClaim: string;
  /**
   * Remember a verified JWT this long (never past its exp), so the hot path checks a signature
   * once per token rather than once per call. A JWT cannot be revoked, only expire, so this
   * changes nothing a caller can observe; 0 turns it off.
   */
  cacheMs?: number;
  /**
   * toolmesh's own signing keys (permission.v1.SigningKey, followed from the permission bucket):
   * a JWT whose `kid` is one of them verifies with it, during a rotation's overlap too.
   */
  signingKeys?: (kid: string) => { publicJwk: string; algorithm: string } | undefined;
}

/** Most verified JWTs remembered at once; the cache starts over when full. */
const MAX_CACHED_JWTS = 10_000;

/** Verifies a JWT and turns its claims into a principal; throws UNAUTHENTICATED with the reason. */
export type JwtVerifier = (token: string) => Promise<Principal>;

/** A verifier for the configured secret or JWKS file, checking exp, nbf, iss and aud. */
export function createJwtVerifier(settings: JwtSettings): JwtVerifier {
  const keys: (Uint8Array | JWTVerifyGetKey)[] = [];
  if (settings.secret) keys.push(new TextEncoder().encode(settings.secret));
  if (settings.jwksFile)
    keys.push(createLocalJWKSet(JSON.parse(readFileSync(settings.jwksFile, "utf8"))));
  if (settings.signingKeys) keys.push(followedKeys(settings.signingKeys));
  const cacheMs = settings.cacheMs ?? 0;
  const cache = new Map<string, { principal: Principal; until: number }>();
  /** Verifications under way: concurrent calls with one token wait for the same one. */
  const verifying = new Map<string, Promise<Principal>>();
  const verify = async (token: string, now: number): Promise<Principal> => {
    let lastError: unknown;
    for (const key of keys) {
      try {
        const { payload } =
          key instanceof Uint8Array
            ? await jwtVerify(token, key, {
                issuer: settings.issuer,
                audience: settings.audience,
                algorithms: ["HS256"],
              })
            : await jwtVerify(token, key, { issuer: settings.issuer, audience: settings.audience });
        const verified = toPrincipal(payload, settings);
        if (cacheMs > 0) {
          if (cache.size >= MAX_CACHED_JWTS) cache.clear();
          const expiry =
            typeof payload.exp === "number" ? payload.exp * 1000 : Number.POSITIVE_INFINITY;
          cache.set(token, { principal: verified, until: Math.min(now + cacheMs, expiry) });
        }
        return verified;
      } catch (error) {
        // The key that told most about the token speaks for it: a signature that verified but
        // an expired or wrong-audience claim, over a key that does not match the token at all.
        if (lastError === undefined || telling(error) >= telling(lastError)) lastError = error;
      }
    }
    throw new ConnectError(
      `bearer token rejected: ${describe(lastError, settings)}`,
      Code.Unauthenticated,
    );
  };
  return (token) => {
    const now = Date.now();
    const hit = cacheMs > 0 ? cache.get(token) : undefined;
    if (hit && hit.until > now) return Promise.resolve(hit.principal);
    if (cacheMs <= 0) return verify(token, now);
    let pending = verifying.get(token);
    if (!pending) {
      pending = verify(token, now).finally(() => verifying.delete(token));
      verifying.set(token, pending);
    }
    return pending;
  };
}

/** A key lookup over toolmesh's signing keys, each public key imported once per kid. */
function followedKeys(lookup: NonNullable<JwtSettings["signingKeys"]>): JWTVerifyGetKey {
  const imported = new Map<string, { jwk: string; key: Promise<CryptoKeyLike> }>();
  return async (header) => {
    const kid = header.kid ?? "";
    const found = kid ? lookup(kid) : undefined;
    if (!found) throw new joseErrors.JWKSNoMatchingKey();
    let entry = imported.get(kid);
    if (entry?.jwk !== found.publicJwk) {
      entry = {
        jwk: found.publicJwk,
        key: importJWK(JSON.parse(found.publicJwk) as JWK, found.algorithm),
      };
      if (imported.size > 1000) imported.clear();
      imported.set(kid, entry);
    }
    return entry.key;
  };
}

/** How much an error of one key says about a token: none of its kind, a bad signature, its claims. */
function telling(error: unknown): number {
  if (
    error instanceof joseErrors.JWKSNoMatchingKey ||
    error instanceof joseErrors.JOSEAlgNotAllowed
  )
    return 0;
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 1;
  return 2;
}

type CryptoKeyLike = Awaited<ReturnType<typeof importJWK>>;

function toPrincipal(payload: JWTPayload, settings: JwtSettings): Principal {
  if (typeof payload.sub !== "string" || payload.sub === "") {
    throw new ConnectError(
      "bearer token rejected: the JWT has no sub (agent id)",
      Code.Unauthenticated,
    );
  }
  // The sub becomes subject tokens and file names downstream: the same limits as any agent id.
  const problem = principalIdProblem(payload.sub);
  if (problem)
    throw new ConnectError(`bearer token rejected: the JWT sub ${problem}`, Code.Unauthenticated);
  const user = payload[settings.userClaim];
  const userProblem = typeof user === "string" && user !== "" ? principalIdProblem(user) : "";
  if (userProblem)
    throw new ConnectError(
      `bearer token rejected: the JWT claim ${settings.userClaim} ${userProblem}`,
      Code.Unauthenticated,
    );
  const roles = payload[settings.rolesClaim];
  const roleList = Array.isArray(roles)
    ? roles.filter((r): r is string => typeof r === "string")
    : [];
  return principal(payload.sub, roleList, typeof user === "string" ? user : "");
}

/** Why an id is not a valid agent or user id, or "" when it is. */
function principalIdProblem(id: string): string {
  try {
    checkPrincipalId("", id);
    return "";
  } catch (error) {
    return error instanceof ConnectError ? error.rawMessage.replace(/^: /, "") : String(error);
  }
}

function describe(error: unknown, settings: JwtSettings): string {
  if (error instanceof joseErrors.JWTExpired) return "the JWT has expired";
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const expected: Record<string, string> = { aud: settings.audience, iss: settings.issuer };
    const want = expected[error.claim];
    if (error.reason === "check_failed")
      return `claim ${error.claim} does not match this server${want ? ` (expected "${want}")` : ""}`;
    return `claim ${error.claim} is ${error.reason === "missing" ? "missing" : "invalid"}`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return "the JWT signature does not verify";
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return "no key of this server verifies it (JWTs verify with TOOLMESH_JWT_SECRET, TOOLMESH_JWKS_FILE, or a toolmesh signing key that is not retired)";
  if (error instanceof joseErrors.JOSEError) return error.message;
  if (error instanceof ConnectError)
    return error.rawMessage.replace(/^bearer token rejected: /, "");
  return "no JWT verification key is configured";
}
