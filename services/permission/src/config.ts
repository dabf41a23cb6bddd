import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, optionalStr, optionalUrl, port } from "@toolmesh/config";
import { vaultSharedConfig } from "@toolmesh/vault";

/** Every setting of the Permission service, read from the environment. */
export const permissionConfig = {
  ...commonConfig,
  ...authConfig,
  ...vaultSharedConfig,
  port: port("TOOLMESH_PERMISSION_PORT", 7102),
  /** The vault key (32 bytes, base64 or hex); else TOOLMESH_VAULT_KEY_FILE; else `<data dir>/vault.key`. */
  vaultKey: optionalStr("TOOLMESH_VAULT_KEY"),
  vaultKeyFile: optionalStr("TOOLMESH_VAULT_KEY_FILE"),
  /** The key the vault was sealed with before a rotation: values are re-encrypted at start. */
  vaultPreviousKey: optionalStr("TOOLMESH_VAULT_PREVIOUS_KEY"),
  vaultPreviousKeyFile: optionalStr("TOOLMESH_VAULT_PREVIOUS_KEY_FILE"),
  vaultMaxSecrets: int("TOOLMESH_VAULT_MAX_SECRETS", 10_000, { min: 1, max: 1_000_000 }),
  /** Where browsers reach Permission (connect links, the OAuth redirect URI); its own address when unset. */
  publicUrl: optionalUrl("TOOLMESH_PERMISSION_PUBLIC_URL", ["http:", "https:"]),
  /**
   * How long a connect link stays valid, and an authorization begun from it (swept after that).
   */
  connectLinkTtlMs: int("TOOLMESH_CONNECT_LINK_TTL_MS", 600_000, { min: 1_000, max: 86_400_000 }),
};

export type PermissionConfig = ConfigOf<typeof permissionConfig>;
