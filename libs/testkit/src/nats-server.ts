import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { LineWatcher } from "./lines.js";
import { freePort } from "./ports.js";

/** A real nats-server with JetStream on its own port and temp store. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** Stops the server (SIGTERM) and keeps the store, so start() brings the data back. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and deletes the store. */
  destroy(): Promise<void>;
}

/** Starts nats-server (from PATH or NATS_SERVER_BIN) and waits until it is ready. */
export async function startNats(): Promise<TestNats> {
  const port = await freePort();
  const storeDir = await mkdtemp(path.join(tmpdir(), "toolmesh-nats-"));
  const bin = process.env.NATS_SERVER_BIN ?? "nats-server";
  let child: ChildProcess | undefined;

  const start = async () => {
    const proc = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    child = proc;
    const lines = new LineWatcher(proc.stderr as NonNullable<typeof proc.stderr>);
    const exited = new Promise<never>((_, reject) => {
      proc.once("exit", (code) =>
        reject(new Error(`nats-server exited with ${code}:\n${lines.tail()}`)),
      );
      proc.once("error", (error) =>
        reject(new Error(`cannot start ${bin}: ${error.message}; run npm run setup`)),
      );
    });
    exited.catch(() => {});
    await Promise.race([
      lines.waitFor((l) => l.includes("Server is ready"), 20_000, "nats-server to be ready"),
      exited,
    ]);
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once("exit", () => resolve());
      proc.kill("SIGTERM");
    });
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    stop,
    start,
    async destroy() {
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}
