import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import { peerAddressKey } from "@toolmesh/server";
import type { AuthGuard } from "./auth-guard.js";
import type { Principal } from "./principal.js";
import { principalKey } from "./principal.js";

/** Turns a bearer token into a principal or throws UNAUTHENTICATED. */
export type Authenticator = (token: string) => Promise<Principal>;

/**
 * Authenticates the authorization header of one request from `peer` (`ip:port`): the principal,
 * or UNAUTHENTICATED, or RESOURCE_EXHAUSTED while the peer or key id is throttled.
 */
export type RequestAuthenticator = (header: string | null, peer: string) => Promise<Principal>;

/** Tokens longer than this are refused before any parsing. */
const MAX_TOKEN_LENGTH = 8192;

/** Services that answer without a credential: health probes and reflection (the public contracts). */
const PUBLIC_SERVICES = new Set([
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
]);

/** Reads `authorization: Bearer <token>`; UNAUTHENTICATED with what to fix otherwise. */
export function bearerToken(header: string | null): string {
  if (!header)
    throw new ConnectError(
      "missing credential: send the header authorization: Bearer <token>",
      Code.Unauthenticated,
    );
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) {
    throw new ConnectError(
      "malformed authorization header: expected Bearer <token>",
      Code.Unauthenticated,
    );
  }
  if (match[1].length > MAX_TOKEN_LENGTH) {
    throw new ConnectError(
      `bearer token longer than ${MAX_TOKEN_LENGTH} characters`,
      Code.Unauthenticated,
    );
  }
  return match[1];
}

/**
 * Wraps an authenticator with the guard: a throttled peer or key id is refused before its token
 * is verified, every UNAUTHENTICATED is counted and logged, and a token that verifies is
 * remembered so a throttle never blocks it.
 */
export function guardedAuthenticator(
  authenticate: Authenticator,
  guard: AuthGuard,
): RequestAuthenticator {
  return async (header, peer) => {
    let token = "";
    let charged: string[] = [];
    try {
      token = bearerToken(header);
      charged = guard.admit(token, peer);
      const p = await authenticate(token);
      guard.succeeded(token, charged);
      return p;
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unauthenticated)
        guard.failed(token, peer, error.rawMessage, charged);
      throw error;
    }
  };
}

/**
 * Authenticates every RPC but health and leaves the principal in the context values; with a
 * guard, failures are logged, counted and throttled.
 */
export function authInterceptor(authenticate: Authenticator, guard?: AuthGuard): Interceptor {
  const check: RequestAuthenticator = guard
    ? guardedAuthenticator(authenticate, guard)
    : (header) => authenticate(bearerToken(header));
  return (next) => async (req) => {
    if (!PUBLIC_SERVICES.has(req.service.typeName)) {
      const p = await check(req.header.get("authorization"), req.contextValues.get(peerAddressKey));
      req.contextValues.set(principalKey, p);
    }
    return next(req);
  };
}
