import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { NatsServer } from "./nats-server.js";
import type { ProcessState } from "./stack-supervision.js";

/** A process of the stack and where it listens, as stack.json lists it. */
export interface RunningEndpoint {
  name: string;
  /** http://host:port, or undefined for a process without a port. */
  url?: string;
  pid: number;
}

/**
 * <data dir>/stack.json: how scripts and tools find a running stack. It holds addresses and the
 * paths of the token files, never a secret itself.
 */
export interface StackFile {
  /** What a service takes as NATS_URL: one URL, or every cluster node's, comma-separated. */
  natsUrl: string;
  /** The local nats-servers (one, or each node of a cluster); empty for an outside NATS. */
  natsNodes: { name: string; url: string; monitorUrl?: string; pid: number }[];
  dataDir: string;
  /** Every process by name: dispatcher, dispatcher-2 … */
  services: Record<string, { url?: string; pid: number }>;
  /** Every address of each service (all its replicas), for clients that balance between them. */
  addresses: Record<string, string[]>;
  tokenFiles: { admin: string; service: string };
  /** The nkey seed file of each bus user (agent: the read-only callback subscriber); empty for an outside NATS. */
  natsCredentials: Record<string, string>;
  logDir: string;
  /**
   * Every process the launcher supervises (services and its nats-servers), by name: its pid now
   * and how often it was restarted, for `toolmesh status`.
   */
  processes: Record<string, ProcessState>;
  /** Where the launcher serves its metrics (restarts of each process), when it does. */
  launcherMetricsUrl?: string;
  /** When the stack started; a rewrite after a restart keeps it. */
  startedAt: string;
}

/** Reads a stack.json; undefined when there is none (no stack was started with this data dir). */
export function readStackFile(dataDir: string): StackFile | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dataDir, "stack.json"), "utf8")) as StackFile;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Where the permission service's bootstrap writes the tokens. */
export function tokenFiles(dataDir: string): StackFile["tokenFiles"] {
  return {
    admin: path.join(dataDir, "admin.token"),
    service: path.join(dataDir, "service.token"),
  };
}

/** Writes stack.json atomically (a reader never sees half a file) and returns what it wrote. */
export function writeStackFile(stack: {
  dataDir: string;
  natsUrl: string;
  natsNodes: NatsServer[];
  endpoints: RunningEndpoint[];
  /** Which service each process runs. */
  services: { process: string; service: string }[];
  natsCredentials: Record<string, string>;
  processes: Record<string, ProcessState>;
  launcherMetricsUrl?: string;
  startedAt: string;
}): StackFile {
  const { dataDir, endpoints } = stack;
  const addresses: Record<string, string[]> = {};
  for (const { process, service } of stack.services) {
    const url = endpoints.find((e) => e.name === process)?.url;
    if (url) addresses[service] = [...(addresses[service] ?? []), url];
  }
  const file: StackFile = {
    natsUrl: stack.natsUrl,
    natsNodes: stack.natsNodes.map((node, i) => ({
      name: node.serverName ?? `nats-server-${i + 1}`,
      url: node.url,
      ...(node.monitorUrl ? { monitorUrl: node.monitorUrl } : {}),
      pid: node.current?.process.pid ?? 0,
    })),
    dataDir,
    services: Object.fromEntries(
      endpoints.map((e) => [e.name, { ...(e.url ? { url: e.url } : {}), pid: e.pid }]),
    ),
    addresses,
    tokenFiles: tokenFiles(dataDir),
    natsCredentials: stack.natsCredentials,
    logDir: path.join(dataDir, "logs"),
    processes: stack.processes,
    ...(stack.launcherMetricsUrl ? { launcherMetricsUrl: stack.launcherMetricsUrl } : {}),
    startedAt: stack.startedAt,
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
