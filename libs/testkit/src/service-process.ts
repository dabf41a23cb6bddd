import path from "node:path";
import { fileURLToPath } from "node:url";
import { ServiceProcess } from "@toolmesh/launcher";

/** The repository root, found from this file. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

export type { ServiceProcess };

/**
 * Starts services/<name>/src/main.ts as its own process with the given environment (a port of
 * 0 picks a free one) and resolves once its log says "listening" (or "ready", for a subscriber).
 * It does not wait for SERVING: a test may start a service before what it depends on exists.
 */
export async function startService(
  name: string,
  env: Record<string, string>,
  options: { timeoutMs?: number; readyPattern?: string } = {},
): Promise<ServiceProcess> {
  const service = new ServiceProcess({
    name,
    root: repoRoot,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    portEnv: `TOOLMESH_${name.toUpperCase().replaceAll("-", "_")}_PORT`,
    startTimeoutMs: options.timeoutMs ?? 30_000,
    readyPattern: options.readyPattern,
    waitServing: false,
  });
  await service.start();
  return service;
}
