import path from "node:path";
import type { ServiceSpec } from "./services.js";

/** How far apart the ports of two replicas of a service are: 7100, 7110, 7120 … */
export const REPLICA_PORT_STEP = 10;

/** The services that run once whatever the replica count: the console only proxies to the others. */
const SINGLE: ReadonlySet<string> = new Set(["console"]);

/** Processes of every service, or of each named one (the rest run once). */
export type Replicas = number | Record<string, number>;

/** How many processes of this service the stack runs. */
export function replicasOf(spec: ServiceSpec, replicas: Replicas): number {
  if (typeof replicas !== "number") return replicas[spec.name] ?? 1;
  return SINGLE.has(spec.name) ? 1 : replicas;
}

/** A replica's process name: the service's own for the first (dispatcher), then dispatcher-2 … */
export function replicaName(service: string, replica: number): string {
  return replica === 1 ? service : `${service}-${replica}`;
}

/**
 * What a replica needs besides its service's environment: a port of its own (its service's port
 * + 10·(n − 1); port 0 stays 0, a free one) and files of its own where a service keeps any per
 * process (Audit's query index). Memory files are shared: one memory-writer holds the lease.
 */
export function replicaEnv(
  spec: ServiceSpec,
  replica: number,
  env: NodeJS.ProcessEnv,
  dataDir: string,
): NodeJS.ProcessEnv {
  if (replica === 1) return {};
  const out: NodeJS.ProcessEnv = {};
  const shift = (variable: string, fallback: number | undefined) => {
    const port = Number(env[variable] ?? fallback ?? 0);
    // 0 and -1 (a free port, or off) mean the same for every replica.
    if (Number.isInteger(port) && port > 0) {
      out[variable] = String(port + REPLICA_PORT_STEP * (replica - 1));
    }
  };
  if (spec.portEnv) shift(spec.portEnv, spec.defaultPort);
  if (spec.name === "dispatcher") shift("TOOLMESH_DISPATCHER_GRPC_PORT", undefined);
  const ownFile = (variable: string, fallback: string) => {
    out[variable] = (env[variable] || fallback).replace(/(\.sqlite)?$/, `-${replica}$1`);
  };
  if (spec.name === "audit")
    ownFile("TOOLMESH_AUDIT_INDEX_PATH", path.join(dataDir, "audit", "index.sqlite"));
  return out;
}
