import type { Authenticator } from "@toolmesh/auth";
import type { Principal } from "@toolmesh/proto";

/**
 * Remembers verified bearer tokens for a short time, so the hot path verifies a JWT signature
 * or an API key hash once per token per ttl instead of once per call. Refusals are never
 * cached. A revoked key or an expired JWT is refused at the latest ttlMs later, in line with
 * the snapshots' "within a second".
 */
export function cachedAuthenticator(
  authenticate: Authenticator,
  ttlMs: number,
  maxEntries = 10_000,
): Authenticator {
  if (ttlMs <= 0) return authenticate;
  const cache = new Map<string, { principal: Principal; until: number }>();
  return async (token) => {
    const now = Date.now();
    const hit = cache.get(token);
    if (hit && hit.until > now) return hit.principal;
    const principal = await authenticate(token);
    if (cache.size >= maxEntries) cache.clear();
    cache.set(token, { principal, until: now + ttlMs });
    return principal;
  };
}
