import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { freePort, LineWatcher, repoRoot, startStack, type TestStack } from "@toolmesh/testkit";

/** server-everything's entry point (`streamableHttp` or `stdio` as its argument). */
export const everything = path.join(
  repoRoot,
  "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);

/** A stack whose Dispatcher can import, and the reference MCP server over streamable HTTP. */
export interface EverythingStack {
  stack: TestStack;
  /** server-everything (from the npm registry), started here. */
  server: ChildProcess;
  /** Its MCP endpoint. */
  mcpUrl: string;
  /** Where Permission listens (its OAuth callback is below it). */
  permissionUrl: string;
}

/**
 * Starts server-everything and the call chain; ImportMcpServer writes to the Registry and asks
 * Permission, so the Dispatcher is told where both listen.
 */
export async function startEverythingStack(): Promise<EverythingStack> {
  const [port, registryPort, permissionPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const server = spawn(process.execPath, [everything, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = new LineWatcher(server.stderr as NonNullable<ChildProcess["stderr"]>);
  const permissionUrl = `http://127.0.0.1:${permissionPort}`;
  const [stack] = await Promise.all([
    startStack({
      serviceEnv: {
        registry: { TOOLMESH_REGISTRY_PORT: String(registryPort) },
        permission: { TOOLMESH_PERMISSION_PORT: String(permissionPort) },
        dispatcher: {
          TOOLMESH_REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
          TOOLMESH_PERMISSION_URL: permissionUrl,
        },
      },
    }),
    stderr.waitFor((l) => l.includes("listening on port"), 20_000, "server-everything"),
  ]);
  return { stack, server, mcpUrl: `http://127.0.0.1:${port}/mcp`, permissionUrl };
}
