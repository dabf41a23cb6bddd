export { newVaultKey, parseVaultKey, VaultCipher, VaultSealError, vaultKeyId } from "./cipher.js";
export { vaultSharedConfig } from "./config.js";
export {
  injectedText,
  injectionProblem,
  type RuntimeWord,
  sourceOf,
} from "./injection.js";
export {
  authorizationUrl,
  discoverIssuer,
  discoverProtectedResource,
  exchangeCode,
  exchangeToken,
  type OAuthClient,
  type OAuthEndpoints,
  OAuthError,
  pkcePair,
  refreshTokens,
  registerClient,
  revokeToken,
  type TokenSet,
  UPSTREAM_TIMEOUT_MS,
} from "./oauth-client.js";
export {
  connectionId,
  describeScope,
  missingSecretMessage,
  notConnectedMessage,
  pickSecret,
  RUNTIME_WORDS,
  type SecretCaller,
  scopeCovers,
  secretId,
} from "./scope.js";
export { hideSecrets, hideSecretsInJson, REDACTED } from "./scrub.js";
export { SecretsByName, type SecretView } from "./secret-index.js";
export { answerSecretRequests, requestConnectLink, requestSecrets } from "./secret-requests.js";
