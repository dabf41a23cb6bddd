import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { DockerSecret } from "@toolmesh/proto";
import { ToolStartError } from "./supervised-backend.js";

/** A secret value is a small file; anything larger is a mistake, not a secret. */
const MAX_SECRET_BYTES = 64 * 1024;

/** The declared secrets of a docker tool, resolved to environment entries. */
export interface ResolvedSecrets {
  env: Record<string, string>;
  /** The values, so that text shown to operators (a crashed tool's log tail) can hide them. */
  values: string[];
}

/**
 * Reads each declared secret from the Dispatcher's secrets directory (one file per secret, as
 * Docker and Kubernetes mount them). Only declared names are read; the registry never holds a
 * value. A missing directory or file fails the start with a message naming the secret, never
 * its value.
 */
export async function resolveSecrets(
  declared: readonly DockerSecret[],
  secretsDir: string,
): Promise<ResolvedSecrets> {
  const resolved: ResolvedSecrets = { env: {}, values: [] };
  if (declared.length === 0) return resolved;
  if (secretsDir === "") {
    throw new ToolStartError(
      `the tool declares secret "${declared[0]?.name}" but the Dispatcher has no secrets directory; set TOOLMESH_TOOL_SECRETS_DIR to a directory with one file per secret`,
    );
  }
  for (const secret of declared) {
    const file = path.join(secretsDir, secret.name);
    let value: string;
    try {
      const info = await stat(file);
      if (!info.isFile() || info.size > MAX_SECRET_BYTES) {
        throw new ToolStartError(
          `secret "${secret.name}" in TOOLMESH_TOOL_SECRETS_DIR must be a file of at most ${MAX_SECRET_BYTES} bytes`,
        );
      }
      value = (await readFile(file, "utf8")).replace(/\r?\n$/, "");
    } catch (error) {
      if (error instanceof ToolStartError) throw error;
      throw new ToolStartError(
        `secret "${secret.name}" is not in TOOLMESH_TOOL_SECRETS_DIR (no readable file named ${secret.name})`,
      );
    }
    resolved.env[secret.env || secret.name] = value;
    if (value !== "") resolved.values.push(value);
  }
  return resolved;
}
