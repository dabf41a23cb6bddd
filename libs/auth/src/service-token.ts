import { readFileSync } from "node:fs";
import path from "node:path";

/** The file, under the data dir, where the Permission service writes the bootstrap service token. */
export const SERVICE_TOKEN_FILE = "service.token";
/** The file, under the data dir, where the Permission service writes the bootstrap admin token. */
export const ADMIN_TOKEN_FILE = "admin.token";

/**
 * The token a service uses for service-to-service calls: TOOLMESH_SERVICE_TOKEN when set,
 * otherwise `<TOOLMESH_DATA_DIR>/service.token`; undefined when neither exists.
 */
export function serviceToken(config: {
  serviceToken?: string | undefined;
  dataDir: string;
}): string | undefined {
  if (config.serviceToken) return config.serviceToken;
  try {
    const text = readFileSync(path.join(config.dataDir, SERVICE_TOKEN_FILE), "utf8").trim();
    return text === "" ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
