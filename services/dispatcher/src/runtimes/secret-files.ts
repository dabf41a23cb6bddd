import { chmod, chown, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CallSecretValues } from "./call-secrets.js";
import { ToolStartError } from "./supervised-backend.js";

/** A started backend's secret files: a private directory, removed once the backend has ended. */
export interface SecretFiles {
  dir: string;
  remove(): Promise<void>;
}

/** The environment entries of a backend's env injections. */
export function secretEnv(secrets: CallSecretValues | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { injection, text } of secrets?.injected ?? []) {
    if (injection.target.case === "env") env[injection.target.value] = text;
  }
  return env;
}

/**
 * Writes a backend's file injections into a fresh directory readable only by the tool's user
 * (mode 0500, each file 0400): the Dispatcher's own user for a local tool, the container's uid
 * and gid for a docker tool (chown needs the Dispatcher to run as root, or as that uid).
 * Undefined when the tool has no file secrets.
 */
export async function writeSecretFiles(
  secrets: CallSecretValues | undefined,
  owner?: { uid: number; gid: number },
): Promise<SecretFiles | undefined> {
  const files = (secrets?.injected ?? []).filter((i) => i.injection.target.case === "file");
  if (files.length === 0) return undefined;
  const dir = await mkdtemp(path.join(tmpdir(), "toolmesh-secrets-"));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    await chmod(dir, 0o700);
    for (const { injection, text } of files) {
      const file = path.join(dir, String(injection.target.value));
      await writeFile(file, text, { mode: 0o400, flag: "wx" });
      if (owner) await chown(file, owner.uid, owner.gid);
    }
    if (owner) await chown(dir, owner.uid, owner.gid);
    await chmod(dir, 0o500);
  } catch (error) {
    await remove();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EPERM" && owner)
      throw new ToolStartError(
        `the tool's secret files cannot be given to uid ${owner.uid}: the Dispatcher must run as root, or the container as the Dispatcher's own uid (${process.getuid?.()})`,
      );
    throw new ToolStartError(
      `the tool's secret files could not be written: ${code ?? String(error)}`,
    );
  }
  return { dir, remove };
}
