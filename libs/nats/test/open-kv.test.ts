import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { natsServerBinary } from "@toolmesh/launcher";
import { openKv } from "@toolmesh/nats";
import { connect, type JetStreamClient, type NatsConnection } from "nats";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../../..");

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/** A nats-server on `port`, with JetStream (its store in `storeDir`) or without; resolves once ready. */
async function natsOn(port: number, storeDir?: string): Promise<ChildProcess> {
  const args = ["-a", "127.0.0.1", "-p", String(port)];
  if (storeDir) args.push("-js", "-sd", storeDir);
  const child = spawn(natsServerBinary(root), args, { stdio: ["ignore", "ignore", "pipe"] });
  let seen = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("Server is ready")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`nats-server exited (${code}): ${seen}`)));
  });
  return child;
}

// A process that starts while its server has no JetStream to answer yet (a cluster still electing
// leaders answers "no responders" too) waits for it instead of exiting before it is ready.
describe("openKv", () => {
  let nc: NatsConnection | undefined;
  let server: ChildProcess | undefined;
  let storeDir: string | undefined;
  afterAll(async () => {
    await nc?.close();
    server?.kill("SIGKILL");
    if (storeDir) await rm(storeDir, { recursive: true, force: true });
  });

  it("opens the bucket once JetStream answers, after refusals with no responders", async () => {
    const port = await freePort();
    storeDir = await mkdtemp(path.join(tmpdir(), "toolmesh-open-kv-"));
    server = await natsOn(port);
    nc = await connect({
      servers: `127.0.0.1:${port}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 50,
    });
    const js = nc.jetstream();
    // Counts the tries, so the test knows when the first one was refused.
    let tries = 0;
    let secondTry: () => void = () => {};
    const retried = new Promise<void>((resolve) => {
      secondTry = resolve;
    });
    const counting = {
      views: {
        kv: (...args: Parameters<JetStreamClient["views"]["kv"]>) => {
          if (++tries === 2) secondTry();
          return js.views.kv(...args);
        },
      },
    } as unknown as JetStreamClient;
    const opening = openKv(counting, "probe", { history: 1 });
    await retried;

    // The same port, now with JetStream: the connection comes back and a try succeeds.
    const exited = once(server, "exit");
    server.kill("SIGTERM");
    await exited;
    server = await natsOn(port, storeDir);
    const kv = await opening;
    await kv.put("k", new TextEncoder().encode("v"));
    expect(new TextDecoder().decode((await kv.get("k"))?.value)).toBe("v");
    expect(tries).toBeGreaterThanOrEqual(2);
  }, 30_000);
});
