import { int, optionalStr, str } from "@toolmesh/config";

/** Auth settings every service reads (see README, "Authentication"). */
export const authConfig = {
  jwtSecret: optionalStr("TOOLMESH_JWT_SECRET"),
  jwksFile: optionalStr("TOOLMESH_JWKS_FILE"),
  jwtIssuer: str("TOOLMESH_JWT_ISSUER", "toolmesh"),
  jwtAudience: str("TOOLMESH_JWT_AUDIENCE", "toolmesh"),
  jwtUserClaim: str("TOOLMESH_JWT_USER_CLAIM", "on_behalf_of"),
  jwtRolesClaim: str("TOOLMESH_JWT_ROLES_CLAIM", "roles"),
  serviceToken: optionalStr("TOOLMESH_SERVICE_TOKEN"),
  jwtCacheMs: int("TOOLMESH_JWT_CACHE_MS", 1000, { min: 0, max: 60_000 }),
  /** Failed authentications a source address or key id may have in a burst (docs/security.md). */
  authFailureBurst: int("TOOLMESH_AUTH_FAILURE_BURST", 20, { min: 1, max: 1_000_000 }),
  /** Failed authentications per second a source address or key id earns back. */
  authFailuresPerSecond: int("TOOLMESH_AUTH_FAILURES_PER_SECOND", 1, { min: 1, max: 1_000_000 }),
};

export type AuthConfig = {
  jwtSecret: string | undefined;
  jwksFile: string | undefined;
  jwtIssuer: string;
  jwtAudience: string;
  jwtUserClaim: string;
  jwtRolesClaim: string;
  /** Token for service-to-service calls; see serviceToken(). */
  serviceToken?: string | undefined;
  /** How long a verified JWT is remembered; see JwtSettings.cacheMs. */
  jwtCacheMs?: number;
  authFailureBurst?: number;
  authFailuresPerSecond?: number;
};
