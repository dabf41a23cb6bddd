export {
  API_KEY_HASH_ALGORITHM,
  API_KEY_PREFIX,
  createApiKeyVerifier,
  isApiKeyToken,
  type MintedApiKey,
  mintApiKey,
  parseApiKeyToken,
} from "./api-key.js";
export {
  type AuthFailureCounters,
  AuthGuard,
  type AuthGuardSettings,
  claimantOf,
  defaultAuthGuardSettings,
} from "./auth-guard.js";
export { type AuthConfig, authConfig } from "./config.js";
export {
  type Authenticator,
  authInterceptor,
  bearerToken,
  guardedAuthenticator,
  type RequestAuthenticator,
} from "./interceptor.js";
export { createJwtVerifier, type JwtSettings, type JwtVerifier } from "./jwt.js";
export {
  hasRole,
  type Principal,
  principal,
  principalKey,
  principalOf,
  Role,
  requireRole,
} from "./principal.js";
export { type ServiceAuth, startServiceAuth } from "./service-auth.js";
export { ADMIN_TOKEN_FILE, SERVICE_TOKEN_FILE, serviceToken } from "./service-token.js";
export { toolAgentIdentity } from "./tool-agent.js";
