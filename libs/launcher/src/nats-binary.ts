import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

/**
 * The nats-server to run: the pinned one `npm run setup` installs (.toolmesh/bin/nats-server),
 * else NATS_SERVER_BIN, else `nats-server` from PATH.
 */
export function natsServerBinary(root: string, env: NodeJS.ProcessEnv = process.env): string {
  const pinned = path.join(root, ".toolmesh", "bin", "nats-server");
  if (existsSync(pinned)) return pinned;
  return env.NATS_SERVER_BIN || "nats-server";
}

/** A nats-server version as [major, minor, patch]. */
export type ServerVersion = [number, number, number];

/** What `<bin> --version` says, or undefined when it cannot be run or read. */
export function natsServerVersion(bin: string): ServerVersion | undefined {
  try {
    const out = execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000 });
    const match = /v?(\d+)\.(\d+)\.(\d+)/.exec(out);
    return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
  } catch {
    return undefined;
  }
}

/** True when `version` is at least `min`. */
export function atLeast(version: ServerVersion, min: ServerVersion): boolean {
  for (let i = 0; i < 3; i++) {
    if ((version[i] as number) !== (min[i] as number)) {
      return (version[i] as number) > (min[i] as number);
    }
  }
  return true;
}
