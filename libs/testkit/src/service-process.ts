import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ServiceProcess } from "@toolmesh/launcher";
import { testCredentialFile } from "./nats-server.js";
import { repoRoot } from "./repo-root.js";

export type { ServiceProcess };
export { repoRoot };

/**
 * Starts services/<name>/src/main.ts as its own process with the given environment (a port of
 * 0 picks a free one) and resolves once its log says "listening" (or "ready", for a subscriber).
 * It does not wait for SERVING: a test may start a service before what it depends on exists.
 * Against a server from startNats it connects with its own nkey, as under `npm start`.
 * Without a TOOLMESH_DATA_DIR it gets a fresh one (its restarts keep it), so the files a service
 * keeps per process (Audit's index) are never another test's.
 */
export async function startService(
  name: string,
  env: Record<string, string>,
  options: { timeoutMs?: number; readyPattern?: string } = {},
): Promise<ServiceProcess> {
  const credential = testCredentialFile(env.NATS_URL, name);
  const service = new ServiceProcess({
    name,
    root: repoRoot,
    env: {
      ...process.env,
      LOG_LEVEL: "info",
      ...(env.TOOLMESH_DATA_DIR
        ? {}
        : { TOOLMESH_DATA_DIR: mkdtempSync(path.join(tmpdir(), `toolmesh-${name}-`)) }),
      ...(credential ? { TOOLMESH_NATS_NKEY_FILE: credential } : {}),
      ...env,
    },
    portEnv: portEnvOf(name),
    startTimeoutMs: options.timeoutMs ?? 30_000,
    readyPattern: options.readyPattern,
    waitServing: false,
  });
  await service.start();
  return service;
}

/** The variable holding a service's port: TOOLMESH_<NAME>_PORT. */
export function portEnvOf(name: string): string {
  return `TOOLMESH_${name.toUpperCase().replaceAll("-", "_")}_PORT`;
}
