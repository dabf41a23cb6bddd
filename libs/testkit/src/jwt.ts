import { SignJWT } from "jose";

/** The claims a test JWT carries; roles default to ["agent"]. */
export interface TestClaims {
  sub: string;
  roles?: string[];
  /** The user an agent acts for (claim on_behalf_of). */
  onBehalfOf?: string;
}

/** An HS256 JWT as an identity provider would mint it for toolmesh (iss and aud "toolmesh"). */
export function mintJwt(
  secret: string,
  claims: TestClaims,
  options: { audience?: string; issuer?: string; expiresIn?: string | number } = {},
): Promise<string> {
  return new SignJWT({
    roles: claims.roles ?? ["agent"],
    ...(claims.onBehalfOf ? { on_behalf_of: claims.onBehalfOf } : {}),
  })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claims.sub)
    .setIssuer(options.issuer ?? "toolmesh")
    .setAudience(options.audience ?? "toolmesh")
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "1h")
    .sign(new TextEncoder().encode(secret));
}

/**
 * Two JWTs a service must refuse though they are signed with its secret: one that expired a
 * minute ago, and one minted for another audience.
 */
export async function refusedJwts(
  secret: string,
  claims: TestClaims = { sub: "admin", roles: ["admin"] },
): Promise<{ expired: string; wrongAudience: string }> {
  return {
    expired: await mintJwt(secret, claims, { expiresIn: Math.floor(Date.now() / 1000) - 60 }),
    wrongAudience: await mintJwt(secret, claims, { audience: "someone-else" }),
  };
}
