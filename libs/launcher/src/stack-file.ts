import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { RunningEndpoint } from "./stack.js";

/**
 * <data dir>/stack.json: how scripts and tools find a running stack. It holds addresses and the
 * paths of the token files, never a secret itself.
 */
export interface StackFile {
  natsUrl: string;
  dataDir: string;
  services: Record<string, { url?: string; pid: number }>;
  tokenFiles: { admin: string; service: string };
  /** The nkey seed file of each bus user (agent: the read-only callback subscriber); empty for an outside NATS. */
  natsCredentials: Record<string, string>;
  logDir: string;
  startedAt: string;
}

/** Where the permission service's bootstrap writes the tokens. */
export function tokenFiles(dataDir: string): StackFile["tokenFiles"] {
  return {
    admin: path.join(dataDir, "admin.token"),
    service: path.join(dataDir, "service.token"),
  };
}

/** Writes stack.json atomically (a reader never sees half a file) and returns what it wrote. */
export function writeStackFile(
  dataDir: string,
  natsUrl: string,
  endpoints: RunningEndpoint[],
  natsCredentials: Record<string, string>,
): StackFile {
  const file: StackFile = {
    natsUrl,
    dataDir,
    services: Object.fromEntries(
      endpoints.map((e) => [e.name, { ...(e.url ? { url: e.url } : {}), pid: e.pid }]),
    ),
    tokenFiles: tokenFiles(dataDir),
    natsCredentials,
    logDir: path.join(dataDir, "logs"),
    startedAt: new Date().toISOString(),
  };
  const target = path.join(dataDir, "stack.json");
  writeFileSync(`${target}.tmp`, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o644 });
  renameSync(`${target}.tmp`, target);
  return file;
}

/** A token file's content, or undefined when it does not exist yet. */
export function readTokenFile(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
