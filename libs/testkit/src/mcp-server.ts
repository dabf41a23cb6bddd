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
  /** Where Permission listens (its OAuth callback is below it). */
  permissionUrl: string;
  stop(): Promise<void>;
}

/**
 * A stack whose Dispatchers know where its Registry listens, so ImportMcpServer (which writes
 * there with the admin's credential) works.
 */
export async function startImportingStack(
  options: TestStackOptions = {},
): Promise<TestStack & { permissionUrl: string }> {
  const [registryPort, permissionPort] = [await freePort(), await freePort()];
  const registry = `http://127.0.0.1:${registryPort}`;
  const permissionUrl = `http://127.0.0.1:${permissionPort}`;
  // ImportMcpServer writes to the Registry and, for a server protected by OAuth, asks Permission.
  const urls = { TOOLMESH_REGISTRY_URL: registry, TOOLMESH_PERMISSION_URL: permissionUrl };
  const stack = await startStack({
    ...options,
    serviceEnv: {
      ...options.serviceEnv,
      registry: { ...options.serviceEnv?.registry, TOOLMESH_REGISTRY_PORT: String(registryPort) },
      permission: {
        ...options.serviceEnv?.permission,
        TOOLMESH_PERMISSION_PORT: String(permissionPort),
      },
      dispatcher: { ...options.serviceEnv?.dispatcher, ...urls },
      ...Object.fromEntries(
        Array.from({ length: dispatchers(options) - 1 }, (_, i) => [
          `dispatcher-${i + 2}`,
          { ...options.serviceEnv?.[`dispatcher-${i + 2}`], ...urls },
        ]),
      ),
    },
  });
  return Object.assign(stack, { permissionUrl });
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
  let stack: TestStack & { permissionUrl: string };
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
    permissionUrl: stack.permissionUrl,
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
