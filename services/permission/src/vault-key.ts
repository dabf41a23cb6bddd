import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@toolmesh/log";
import { newVaultKey, parseVaultKey, VaultCipher } from "@toolmesh/vault";

/** The file a stack keeps its vault key in when none is configured. */
export const VAULT_KEY_FILE = "vault.key";

/** Where the vault's keys come from (permissionConfig). */
export interface VaultKeySettings {
  vaultKey?: string | undefined;
  vaultKeyFile?: string | undefined;
  vaultPreviousKey?: string | undefined;
  vaultPreviousKeyFile?: string | undefined;
  dataDir: string;
}

/**
 * The vault's cipher from the configured keys: TOOLMESH_VAULT_KEY, else the file
 * TOOLMESH_VAULT_KEY_FILE names, else `<data dir>/vault.key`, made (mode 0600) on a fresh stack's
 * first start. The previous key, when set, opens what is still sealed with it. Never logs a key.
 */
export async function loadVaultCipher(
  settings: VaultKeySettings,
  log: Logger,
): Promise<VaultCipher> {
  const key = await readKey(settings, log);
  const previous = settings.vaultPreviousKey
    ? parseVaultKey(settings.vaultPreviousKey, "TOOLMESH_VAULT_PREVIOUS_KEY")
    : settings.vaultPreviousKeyFile
      ? parseVaultKey(
          await readFile(settings.vaultPreviousKeyFile, "utf8"),
          `TOOLMESH_VAULT_PREVIOUS_KEY_FILE (${settings.vaultPreviousKeyFile})`,
        )
      : undefined;
  return new VaultCipher(key, previous);
}

async function readKey(settings: VaultKeySettings, log: Logger): Promise<Uint8Array> {
  if (settings.vaultKey) return parseVaultKey(settings.vaultKey, "TOOLMESH_VAULT_KEY");
  if (settings.vaultKeyFile)
    return parseVaultKey(
      await readFile(settings.vaultKeyFile, "utf8"),
      `TOOLMESH_VAULT_KEY_FILE (${settings.vaultKeyFile})`,
    );
  const file = path.resolve(settings.dataDir, VAULT_KEY_FILE);
  if (!existsSync(file)) {
    await mkdir(settings.dataDir, { recursive: true, mode: 0o700 });
    // wx: of two replicas sharing a data dir, the second reads the first one's key.
    await writeFile(file, `${newVaultKey()}\n`, { mode: 0o600, flag: "wx" }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      },
    );
    await chmod(file, 0o600);
    log.info(
      { vault_key_file: file },
      "made a vault key; back it up: without it the vault cannot be read",
    );
  }
  return parseVaultKey(await readFile(file, "utf8"), file);
}
