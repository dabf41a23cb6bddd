import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { NatsServer } from "@toolmesh/launcher";
import { repoRoot } from "./service-process.js";

/** A real nats-server with JetStream on its own port and temp store. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** Stops the server (SIGTERM) and keeps the store, so start() brings the data back. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would; the store stays. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and deletes the store. */
  destroy(): Promise<void>;
}

/** Starts nats-server (from PATH or NATS_SERVER_BIN) on a free port and a temp store. */
export async function startNats(): Promise<TestNats> {
  const storeDir = await mkdtemp(path.join(tmpdir(), "toolmesh-nats-"));
  return natsAt(storeDir, { deleteStore: true });
}

/** The same, with the store at a directory the caller owns (kept by destroy()). */
export async function natsAt(
  storeDir: string,
  options: { deleteStore?: boolean } = {},
): Promise<TestNats> {
  const server = new NatsServer({ port: -1, storeDir, cwd: repoRoot, startTimeoutMs: 20_000 });
  try {
    await server.start();
  } catch (error) {
    if (options.deleteStore) await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: server.url,
    port: server.clientPort,
    storeDir,
    stop: () => server.stop(),
    kill: () => server.kill(),
    start: () => server.start(),
    async destroy() {
      await server.stop();
      if (options.deleteStore) await rm(storeDir, { recursive: true, force: true });
    },
  };
}
