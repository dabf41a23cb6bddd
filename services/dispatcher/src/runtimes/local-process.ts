import { type ChildProcess, spawn } from "node:child_process";
import { freePort } from "@toolmesh/config";
import type { LocalRuntime as LocalRuntimeSpec } from "@toolmesh/proto";
import { hideSecrets } from "@toolmesh/vault";
import type { CallSecretValues } from "./call-secrets.js";
import { secretEnv, writeSecretFiles } from "./secret-files.js";
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
export async function launchProcess(
  spec: LocalRuntimeSpec,
  secrets?: CallSecretValues,
): Promise<LaunchedBackend> {
  const port = await freePort();
  const files = await writeSecretFiles(secrets);
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args, {
      cwd: spec.workingDir || process.cwd(),
      env: {
        ...toolEnvironment(process.env, spec.env, port),
        ...secretEnv(secrets),
        ...(files ? { TOOLMESH_SECRETS_DIR: files.dir } : {}),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
  } catch (error) {
    await files?.remove();
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
      // A tool that prints its secret must not put it in a status or a record.
      const tail = hideSecrets(stderrTail.trim(), secrets?.values ?? []);
      resolve(`exited with ${sig ?? `code ${code}`}${tail ? `: ${tail}` : ""}`);
    });
  }).then(async (how) => {
    await files?.remove();
    return how;
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
