import { availableServices, freePort } from "@toolmesh/launcher";
import { repoRoot } from "./service-process.js";
import { startStack, type TestStack } from "./stack.js";

/** Every process of the stack on ports chosen up front, plus the environment its clients need. */
export interface OperatorStack {
  stack: TestStack;
  /** TOOLMESH_HOST and TOOLMESH_*_PORT of every service and the console, as the CLI reads them. */
  env: Record<string, string>;
  adminToken: string;
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Starts every service (the console included) with startStack, each on a port picked before the
 * start, so that clients configured by the same variables as the services — the CLI, the
 * console's proxy — find each one.
 */
export async function startOperatorStack(): Promise<OperatorStack> {
  const specs = availableServices(repoRoot);
  const env: Record<string, string> = { TOOLMESH_HOST: "127.0.0.1" };
  const serviceEnv: Record<string, Record<string, string>> = {};
  for (const spec of specs) {
    if (!spec.portEnv) continue;
    const port = String(await freePort());
    env[spec.portEnv] = port;
    // startStack gives each service a free port of its own; this one is known in advance.
    serviceEnv[spec.name] = { [spec.portEnv]: port };
  }
  const stack = await startStack({ services: specs.map((s) => s.name), env, serviceEnv });
  return {
    stack,
    env,
    adminToken: stack.adminToken,
    dataDir: stack.dataDir,
    stop: () => stack.stop(),
  };
}
