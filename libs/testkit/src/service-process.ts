import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LineWatcher } from "./lines.js";

/** The repository root, found from this file. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** A toolmesh service running as its own Node process. */
export interface ServiceProcess {
  readonly name: string;
  readonly port: number;
  /** http://127.0.0.1:port */
  readonly url: string;
  readonly child: ChildProcess;
  readonly stdout: LineWatcher;
  readonly stderr: LineWatcher;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
}

/**
 * Starts services/<name>/src/main.ts on a free port (PORT=0 through the env var the caller
 * names) and resolves once its "listening" log line reports the port. A process without a port
 * passes `readyPattern`, a substring of the log line it prints when ready; its port is then 0.
 */
export async function startService(
  name: string,
  env: Record<string, string>,
  options: { timeoutMs?: number; readyPattern?: string } = {},
): Promise<ServiceProcess> {
  const entry = path.join(repoRoot, "services", name, "src", "main.ts");
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout = new LineWatcher(child.stdout as NonNullable<typeof child.stdout>);
  const stderr = new LineWatcher(child.stderr as NonNullable<typeof child.stderr>);
  const exited = new Promise<never>((_, reject) => {
    child.once("exit", (code) =>
      reject(
        new Error(
          `${name} exited with ${code} before listening:\n${stdout.tail()}\n${stderr.tail()}`,
        ),
      ),
    );
  });
  exited.catch(() => {});
  const line = await Promise.race([
    stdout.waitFor(
      (l) => l.includes(options.readyPattern ?? '"listening'),
      options.timeoutMs ?? 30_000,
      `${name} to ${options.readyPattern ? "be ready" : "listen"}`,
    ),
    exited,
  ]);
  const port = Number((JSON.parse(line) as { port?: number }).port ?? 0);
  const waitExit = () =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
      else child.once("exit", (code) => resolve(code));
    });
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    stdout,
    stderr,
    async stop() {
      const done = waitExit();
      child.kill("SIGTERM");
      return done;
    },
    async kill() {
      const done = waitExit();
      child.kill("SIGKILL");
      await done;
    },
  };
}
