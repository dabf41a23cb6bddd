import type { Logger } from "@toolmesh/log";
import { OAuthConnections } from "./oauth-connections.js";
import { SecretResolver } from "./secret-resolver.js";
import { SigningKeys } from "./signing-keys.js";
import type { VaultIndex } from "./store.js";
import type { Vault } from "./vault-store.js";

/** The vault and what is built on it: signing keys, users' OAuth connections, the resolver. */
export interface VaultParts {
  vault: Vault;
  signing: SigningKeys;
  connections: OAuthConnections;
  resolver: SecretResolver;
  /** TOOLMESH_VAULT_MAX_SECRETS. */
  maxSecrets: number;
}

export interface VaultSettings {
  /** Where browsers reach Permission; read when a link is made (the port is known only once listening). */
  publicUrl: () => string;
  refreshMarginMs: number;
  linkTtlMs: number;
  maxSecrets: number;
  /** The issuer of toolmesh's own tokens (TOOLMESH_JWT_ISSUER). */
  issuer: string;
}

/** Builds the vault's parts over an opened vault and the index. */
export function createVaultParts(
  index: VaultIndex,
  vault: Vault,
  settings: VaultSettings,
  log: Logger,
  now: () => number = Date.now,
): VaultParts {
  const signing = new SigningKeys(index, vault, now);
  const connections = new OAuthConnections({
    index,
    vault,
    signing,
    log,
    publicUrl: settings.publicUrl,
    refreshMarginMs: settings.refreshMarginMs,
    linkTtlMs: settings.linkTtlMs,
    issuer: settings.issuer,
    now,
  });
  return {
    vault,
    signing,
    connections,
    resolver: new SecretResolver(index, vault, connections),
    maxSecrets: settings.maxSecrets,
  };
}
