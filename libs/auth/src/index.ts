export { type AuthConfig, authConfig } from "./config.js";
export { type Authenticator, authInterceptor, bearerToken } from "./interceptor.js";
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
