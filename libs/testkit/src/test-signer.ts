import { randomBytes } from "node:crypto";
import { createJwtVerifier, type JwtVerifier } from "@toolmesh/auth";
import { mintJwt } from "./jwt.js";

/** Call options carrying a bearer token. */
export interface BearerOptions {
  headers: { authorization: string };
}

/** Call options carrying `token` as a bearer token. */
export function as(token: string): BearerOptions {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** The JWT secret of a test's service and the tokens signed with it. */
export interface TestSigner {
  /** The HS256 secret the service verifies JWTs with (TOOLMESH_JWT_SECRET). */
  readonly secret: string;
  /** A JWT for `sub` with `roles` (["agent"] when none), acting for `onBehalfOf` when given. */
  token(sub: string, roles?: string[], onBehalfOf?: string): Promise<string>;
  /** Call options carrying such a JWT. */
  bearer(sub: string, roles?: string[], onBehalfOf?: string): Promise<BearerOptions>;
  /** Verifies a JWT as a service configured with this secret and the default claims does. */
  verifier(): JwtVerifier;
}

/** A signer over a random secret (or the given one). */
export function testSigner(secret = randomBytes(32).toString("hex")): TestSigner {
  const token = (sub: string, roles?: string[], onBehalfOf?: string) =>
    mintJwt(secret, { sub, ...(roles ? { roles } : {}), ...(onBehalfOf ? { onBehalfOf } : {}) });
  return {
    secret,
    token,
    bearer: async (sub, roles, onBehalfOf) => as(await token(sub, roles, onBehalfOf)),
    verifier: () =>
      createJwtVerifier({
        secret,
        issuer: "toolmesh",
        audience: "toolmesh",
        userClaim: "on_behalf_of",
        rolesClaim: "roles",
      }),
  };
}
