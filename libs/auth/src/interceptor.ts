import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Principal } from "./principal.js";
import { principalKey } from "./principal.js";

/** Turns a bearer token into a principal or throws UNAUTHENTICATED. */
export type Authenticator = (token: string) => Promise<Principal>;

/** Tokens longer than this are refused before any parsing. */
const MAX_TOKEN_LENGTH = 8192;

/** Services that answer without a credential. */
const PUBLIC_SERVICES = new Set(["grpc.health.v1.Health"]);

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

/** Authenticates every RPC but health and leaves the principal in the context values. */
export function authInterceptor(authenticate: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (!PUBLIC_SERVICES.has(req.service.typeName)) {
      const p = await authenticate(bearerToken(req.header.get("authorization")));
      req.contextValues.set(principalKey, p);
    }
    return next(req);
  };
}
