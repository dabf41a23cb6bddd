import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import type { NatsConnection } from "nats";
import type { AuthConfig } from "./config.js";
import { type Authenticator, authInterceptor } from "./interceptor.js";
import { createJwtVerifier, type JwtVerifier } from "./jwt.js";

/** What a service gets from startServiceAuth. */
export interface ServiceAuth {
  authenticate: Authenticator;
  interceptor: Interceptor;
  stop(): void;
}

/** A JWT has three dot-separated parts; anything else is treated as an API key. */
function looksLikeJwt(token: string): boolean {
  return token.split(".").length === 3;
}

/** Builds the authenticator a service uses: JWTs from configured keys and API keys. */
export async function startServiceAuth(options: {
  config: AuthConfig;
  nc: NatsConnection;
  log: Logger;
}): Promise<ServiceAuth> {
  const { config } = options;
  const jwt: JwtVerifier | undefined =
    config.jwtSecret || config.jwksFile
      ? createJwtVerifier({
          ...(config.jwtSecret ? { secret: config.jwtSecret } : {}),
          ...(config.jwksFile ? { jwksFile: config.jwksFile } : {}),
          issuer: config.jwtIssuer,
          audience: config.jwtAudience,
          userClaim: config.jwtUserClaim,
          rolesClaim: config.jwtRolesClaim,
        })
      : undefined;
  const authenticate: Authenticator = async (token) => {
    if (looksLikeJwt(token)) {
      if (!jwt)
        throw new ConnectError(
          "bearer token rejected: JWTs are not enabled on this server",
          Code.Unauthenticated,
        );
      return jwt(token);
    }
    throw new ConnectError("bearer token rejected: unknown API key", Code.Unauthenticated);
  };
  return { authenticate, interceptor: authInterceptor(authenticate), stop() {} };
}
