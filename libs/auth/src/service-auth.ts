import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { buckets, loadWhenCreated, ReconnectingKvSnapshot } from "@toolmesh/nats";
import { ApiKeyRecordSchema, SigningKeySchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import { createApiKeyVerifier, isApiKeyToken } from "./api-key.js";
import { AuthGuard, type AuthGuardSettings, defaultAuthGuardSettings } from "./auth-guard.js";
import type { AuthConfig } from "./config.js";
import {
  type Authenticator,
  authInterceptor,
  guardedAuthenticator,
  type RequestAuthenticator,
} from "./interceptor.js";
import { createJwtVerifier, type JwtVerifier } from "./jwt.js";
import type { Principal } from "./principal.js";

/** What a service gets from startServiceAuth. */
export interface ServiceAuth {
  /** Verifies a token alone, without the failure guard (in-process checks, tests). */
  authenticate: Authenticator;
  /** Verifies a request's authorization header from a peer, through the failure guard. */
  authenticateRequest: RequestAuthenticator;
  interceptor: Interceptor;
  /** Failed-authentication counters and throttles of this process. */
  guard: AuthGuard;
  stop(): void;
}

/** The guard settings a service's configuration gives, defaults for the rest. */
function guardSettings(config: AuthConfig): AuthGuardSettings {
  return {
    ...defaultAuthGuardSettings,
    ...(config.authFailureBurst !== undefined ? { burst: config.authFailureBurst } : {}),
    ...(config.authFailuresPerSecond !== undefined
      ? { perSecond: config.authFailuresPerSecond }
      : {}),
  };
}

/** A JWT has three dot-separated parts; anything else is treated as an API key. */
function looksLikeJwt(token: string): boolean {
  return token.split(".").length === 3;
}

/**
 * Builds the authenticator a service uses: JWTs from configured keys, and API keys verified
 * against a watched snapshot of the permission bucket. When the bucket exists the snapshot is
 * loaded before this resolves; otherwise it is picked up once the Permission service creates
 * it, and API keys fail closed (UNAVAILABLE) until then.
 */
export async function startServiceAuth(options: {
  config: AuthConfig;
  nc: NatsConnection;
  log: Logger;
  guard?: AuthGuardSettings;
}): Promise<ServiceAuth> {
  const { config, nc, log } = options;
  const guard = new AuthGuard(log, options.guard ?? guardSettings(config));
  let signingKeys: ReconnectingKvSnapshot<typeof SigningKeySchema> | undefined;
  // JWTs verify with the configured secret or JWKS file, and with toolmesh's own signing keys.
  const jwt: JwtVerifier = createJwtVerifier({
    ...(config.jwtSecret ? { secret: config.jwtSecret } : {}),
    ...(config.jwksFile ? { jwksFile: config.jwksFile } : {}),
    issuer: config.jwtIssuer,
    audience: config.jwtAudience,
    userClaim: config.jwtUserClaim,
    rolesClaim: config.jwtRolesClaim,
    cacheMs: config.jwtCacheMs ?? 0,
    signingKeys: (kid) => signingKeys?.get(buckets.permission.signingKeyKey(kid)),
  });

  let verifyApiKey: ((token: string) => Principal) | undefined;
  let snapshot: ReconnectingKvSnapshot<typeof ApiKeyRecordSchema> | undefined;
  let stopped = false;
  const load = loadWhenCreated({
    nc,
    bucket: buckets.permission.name,
    log,
    isStopped: () => stopped,
    meanwhile: "API keys are refused until the Permission service creates it",
    readyMessage: "API key verification ready",
    start: async (kv) => {
      const keys = new ReconnectingKvSnapshot(
        nc,
        kv,
        buckets.permission.apiKeyPrefix,
        ApiKeyRecordSchema,
        log,
      );
      const signing = new ReconnectingKvSnapshot(
        nc,
        kv,
        buckets.permission.signingKeyPrefix,
        SigningKeySchema,
        log,
      );
      await Promise.all([keys.start(), signing.start()]);
      if (stopped) {
        keys.stop();
        signing.stop();
        return;
      }
      snapshot = keys;
      signingKeys = signing;
      verifyApiKey = createApiKeyVerifier(keys);
    },
  });
  // When the bucket exists, keys are loaded before the service starts answering.
  await load.firstAttempt;

  const authenticate: Authenticator = async (token) => {
    if (looksLikeJwt(token)) return jwt(token);
    if (isApiKeyToken(token)) {
      if (!verifyApiKey)
        throw new ConnectError(
          "API keys are not loaded yet on this server; retry shortly",
          Code.Unavailable,
        );
      return verifyApiKey(token);
    }
    throw new ConnectError(
      "bearer token rejected: neither a JWT nor an API key (tmk_<id>_<secret>)",
      Code.Unauthenticated,
    );
  };
  return {
    authenticate,
    authenticateRequest: guardedAuthenticator(authenticate, guard),
    interceptor: authInterceptor(authenticate, guard),
    guard,
    stop() {
      stopped = true;
      snapshot?.stop();
      signingKeys?.stop();
    },
  };
}
