import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBusCredentials, NatsServer, type NatsServerUser } from "@toolmesh/launcher";
import { natsPermissions, processUsers } from "@toolmesh/nats";
import { repoRoot } from "./repo-root.js";

/** A real nats-server with JetStream on its own port and temp store. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** The running nats-server's process id (0 while it is down). */
  readonly pid: number;
  /** Milliseconds from spawning it (at its last start) until it accepted clients. */
  readonly readyMs: number;
  /** CPU ms it had used by then. */
  readonly readyCpuMs: number;
  /** Stops the server (SIGTERM) and keeps the store, so start() brings the data back. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would; the store stays. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and deletes the store. */
  destroy(): Promise<void>;
}

/** The nkey seed files of the servers this process started, by URL, for startService. */
const credentialsByUrl = new Map<string, Map<string, string>>();

/** The seed file a service started against `url` authenticates with, if the server is ours. */
export function testCredentialFile(url: string | undefined, user: string): string | undefined {
  return url ? credentialsByUrl.get(url)?.get(user) : undefined;
}

/**
 * Starts nats-server on a free port and a temp store, with authorization as `npm start` runs it:
 * each service started by startService against it connects with its own nkey and only its
 * permissions. A connection without credentials (the test's own) is a user with every permission.
 */
export async function startNats(): Promise<TestNats> {
  const storeDir = await mkdtemp(path.join(tmpdir(), "toolmesh-nats-"));
  return natsAt(storeDir, { deleteStore: true });
}

/** The same, with the store at a directory the caller owns (kept by destroy()). */
export async function natsAt(
  storeDir: string,
  options: { deleteStore?: boolean } = {},
): Promise<TestNats> {
  const credentials = ensureBusCredentials(storeDir, processUsers);
  const users: NatsServerUser[] = [
    ...credentials.map((c) => ({
      name: c.user,
      nkey: c.publicKey,
      permissions: natsPermissions(c.user as (typeof processUsers)[number]),
    })),
    { name: "test", password: randomBytes(16).toString("hex") },
  ];
  const server = new NatsServer({
    port: -1,
    storeDir,
    users,
    noAuthUser: "test",
    cwd: repoRoot,
    startTimeoutMs: 20_000,
  });
  try {
    await server.start();
  } catch (error) {
    if (options.deleteStore) await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  credentialsByUrl.set(server.url, new Map(credentials.map((c) => [c.user, c.seedFile])));
  return {
    url: server.url,
    port: server.clientPort,
    storeDir,
    get pid() {
      return server.current?.process.pid ?? 0;
    },
    get readyMs() {
      return server.readyMs;
    },
    get readyCpuMs() {
      return server.readyCpuMs;
    },
    stop: () => server.stop(),
    kill: () => server.kill(),
    start: () => server.start(),
    async destroy() {
      await server.stop();
      credentialsByUrl.delete(server.url);
      if (options.deleteStore) await rm(storeDir, { recursive: true, force: true });
    },
  };
}
