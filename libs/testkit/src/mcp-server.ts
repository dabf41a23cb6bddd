import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { freePort, LineWatcher, replicasOf } from "@toolmesh/launcher";
import { repoRoot } from "./service-process.js";
import { startStack, type TestStack, type TestStackOptions } from "./stack.js";

/** The reference MCP server (@modelcontextprotocol/server-everything) the MCP tests import. */
export const everythingScript = path.join(
  repoRoot,
  "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);

/** A stack whose Dispatcher imports MCP servers, and server-everything to import. */
export interface EverythingStack {
  stack: TestStack;
  /** server-everything's streamable-HTTP endpoint. */
  url: string;
  /** The runtime that starts server-everything over stdio. */
  stdio: { command: string; args: string[] };
  stop(): Promise<void>;
}

/**
 * A stack whose Dispatchers know where its Registry listens, so ImportMcpServer (which writes
 * there with the admin's credential) works.
 */
export async function startImportingStack(options: TestStackOptions = {}): Promise<TestStack> {
  const registryPort = await freePort();
  const registry = `http://127.0.0.1:${registryPort}`;
  return startStack({
    ...options,
    serviceEnv: {
      ...options.serviceEnv,
      registry: { ...options.serviceEnv?.registry, TOOLMESH_REGISTRY_PORT: String(registryPort) },
      dispatcher: { ...options.serviceEnv?.dispatcher, TOOLMESH_REGISTRY_URL: registry },
      ...Object.fromEntries(
        Array.from({ length: dispatchers(options) - 1 }, (_, i) => [
          `dispatcher-${i + 2}`,
          { ...options.serviceEnv?.[`dispatcher-${i + 2}`], TOOLMESH_REGISTRY_URL: registry },
        ]),
      ),
    },
  });
}

/** server-everything over streamable HTTP on a free port, and an importing stack beside it. */
export async function startEverythingStack(
  options: TestStackOptions = {},
): Promise<EverythingStack> {
  const port = await freePort();
  const server: ChildProcess = spawn(process.execPath, [everythingScript, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = new LineWatcher(server.stderr as NonNullable<ChildProcess["stderr"]>);
  let stack: TestStack;
  try {
    [stack] = await Promise.all([
      startImportingStack(options),
      stderr.waitFor((l) => l.includes("listening on port"), 20_000, "server-everything"),
    ]);
  } catch (error) {
    server.kill();
    throw error;
  }
  return {
    stack,
    url: `http://127.0.0.1:${port}/mcp`,
    stdio: { command: process.execPath, args: [everythingScript, "stdio"] },
    async stop() {
      server.kill();
      await stack.stop();
    },
  };
}

/** How many Dispatchers a stack of these options runs. */
function dispatchers(options: TestStackOptions): number {
  return replicasOf({ name: "dispatcher" } as never, options.replicas ?? (options.cluster ? 2 : 1));
}
