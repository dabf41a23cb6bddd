import { readFileSync } from "node:fs";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  createLocalJWKSet,
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
}

/** Verifies a JWT and turns its claims into a principal; throws UNAUTHENTICATED with the reason. */
export type JwtVerifier = (token: string) => Promise<Principal>;

/** A verifier for the configured secret or JWKS file, checking exp, nbf, iss and aud. */
export function createJwtVerifier(settings: JwtSettings): JwtVerifier {
  const keys: (Uint8Array | JWTVerifyGetKey)[] = [];
  if (settings.secret) keys.push(new TextEncoder().encode(settings.secret));
  if (settings.jwksFile)
    keys.push(createLocalJWKSet(JSON.parse(readFileSync(settings.jwksFile, "utf8"))));
  return async (token) => {
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
        return toPrincipal(payload, settings);
      } catch (error) {
        lastError = error;
      }
    }
    throw new ConnectError(
      `bearer token rejected: ${describe(lastError, settings)}`,
      Code.Unauthenticated,
    );
  };
}

function toPrincipal(payload: JWTPayload, settings: JwtSettings): Principal {
  if (typeof payload.sub !== "string" || payload.sub === "") {
    throw new ConnectError(
      "bearer token rejected: the JWT has no sub (agent id)",
      Code.Unauthenticated,
    );
  }
  const user = payload[settings.userClaim];
  const roles = payload[settings.rolesClaim];
  const roleList = Array.isArray(roles)
    ? roles.filter((r): r is string => typeof r === "string")
    : [];
  return principal(payload.sub, roleList, typeof user === "string" ? user : "");
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
  if (error instanceof joseErrors.JOSEError) return error.message;
  if (error instanceof ConnectError)
    return error.rawMessage.replace(/^bearer token rejected: /, "");
  return "no JWT verification key is configured";
}
