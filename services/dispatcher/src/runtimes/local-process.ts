import { type ChildProcess, spawn } from "node:child_process";
import { freePort } from "@toolmesh/config";
import type { LocalRuntime as LocalRuntimeSpec } from "@toolmesh/proto";
import { type LaunchedBackend, ToolStartError } from "./supervised-backend.js";

/** How long a local tool gets to exit after SIGTERM before it is killed. */
const STOP_GRACE_MS = 2000;

/**
 * The environment of a local tool: the machine's (PATH, HOME, locale …) without the Dispatcher's
 * own settings and credentials (TOOLMESH_*, NATS_*: the JWT secret, NATS keys, tokens), then the
 * tool's declared env and its port. Secrets never reach a tool backend unless it declares them.
 */
export function toolEnvironment(
  base: NodeJS.ProcessEnv,
  declared: Record<string, string>,
  port: number,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (!/^(TOOLMESH_|NATS_)/.test(name)) env[name] = value;
  }
  return { ...env, ...declared, TOOLMESH_TOOL_PORT: String(port) };
}

/**
 * Starts a local tool's command on a free port (TOOLMESH_TOOL_PORT); the supervisor health-checks,
 * restarts and stops it.
 */
export async function launchProcess(spec: LocalRuntimeSpec): Promise<LaunchedBackend> {
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args, {
      cwd: spec.workingDir || process.cwd(),
      env: toolEnvironment(process.env, spec.env, port),
      stdio: ["ignore", "ignore", "pipe"],
    });
  } catch (error) {
    throw new ToolStartError(`cannot start ${spec.command}: ${String(error)}`);
  }
  let stderrTail = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-500);
  });
  const ended = new Promise<string>((resolve) => {
    child.once("error", (error) => resolve(`cannot start ${spec.command}: ${error.message}`));
    child.once("exit", (code, sig) => {
      const tail = stderrTail.trim();
      resolve(`exited with ${sig ?? `code ${code}`}${tail ? `: ${tail}` : ""}`);
    });
  });
  return {
    port,
    pid: child.pid ?? 0,
    containerId: "",
    ended,
    async stop() {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
        child.kill("SIGTERM");
        await ended;
        clearTimeout(timer);
      }
    },
  };
}
