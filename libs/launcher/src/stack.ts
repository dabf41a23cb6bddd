import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "@toolmesh/proto";
import { Child } from "./child.js";
import { availableServices, serviceEntry } from "./services.js";

export interface StackOptions {
  /** The repository root. */
  root: string;
  /** Use this NATS server; when undefined a local nats-server is started with JetStream. */
  natsUrl?: string | undefined;
  /** Port of the local nats-server; -1 picks a free one. */
  natsPort: number;
  /** Where state lives: NATS store, tokens, memory files, logs. */
  dataDir: string;
  /** Extra environment for every service (ports, secrets, log level). */
  env: NodeJS.ProcessEnv;
  /** Give up when the stack is not healthy after this long. */
  startTimeoutMs: number;
  /** Called for progress lines meant for a person. */
  say: (line: string) => void;
}

export interface RunningEndpoint {
  name: string;
  /** http://host:port, or undefined for a process without a port. */
  url?: string;
  pid: number;
}

export interface RunningStack {
  natsUrl: string;
  endpoints: RunningEndpoint[];
  /** The admin token written by the permission service's bootstrap, if there is one. */
  adminToken?: string;
  /** Resolves with the first child that exits on its own. */
  firstExit: Promise<{
    name: string;
    code: number | null;
    signal: NodeJS.Signals | null;
    lastLines: string;
  }>;
  stop(): Promise<void>;
}

/** Raised when the stack cannot come up; the message says which process and why. */
export class StackError extends Error {
  override name = "StackError";
}

/** Starts NATS (unless given) and every service that exists, and waits until all are healthy. */
export async function startStack(options: StackOptions): Promise<RunningStack> {
  const { root, dataDir, say } = options;
  const logDir = path.join(dataDir, "logs");
  mkdirSync(logDir, { recursive: true });
  const children: Child[] = [];
  const stopAll = async () => {
    for (const child of [...children].reverse()) await child.stop();
  };

  try {
    let natsUrl = options.natsUrl;
    if (!natsUrl) {
      const storeDir = path.join(dataDir, "nats");
      mkdirSync(storeDir, { recursive: true });
      const nats = new Child(
        "nats-server",
        process.env.NATS_SERVER_BIN ?? "nats-server",
        ["-a", "127.0.0.1", "-p", String(options.natsPort), "-js", "-sd", storeDir],
        { cwd: root, env: process.env, logPath: path.join(logDir, "nats-server.log") },
      );
      children.push(nats);
      const line = await raceExit(
        nats,
        nats.stderr.waitFor(
          (l) => l.includes("Listening for client connections on"),
          options.startTimeoutMs,
          "nats-server",
        ),
        "is nats-server installed? run npm run setup, or set NATS_URL",
      );
      const port = /:(\d+)\s*$/.exec(line)?.[1];
      natsUrl = `nats://127.0.0.1:${port}`;
      await raceExit(
        nats,
        nats.stderr.waitFor(
          (l) => l.includes("Server is ready"),
          options.startTimeoutMs,
          "nats-server",
        ),
      );
      say(`nats-server with JetStream at ${natsUrl} (store ${storeDir})`);
    } else {
      say(`using NATS at ${natsUrl}`);
    }

    const specs = availableServices(root);
    const endpoints: RunningEndpoint[] = [];
    // Permission goes first: its bootstrap writes the tokens other services read.
    for (const spec of specs) {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...options.env,
        NATS_URL: natsUrl,
        TOOLMESH_DATA_DIR: dataDir,
      };
      const child = new Child(
        spec.name,
        process.execPath,
        ["--import", "tsx", serviceEntry(root, spec.name)],
        {
          cwd: root,
          env,
          logPath: path.join(logDir, `${spec.name}.log`),
        },
      );
      children.push(child);
      const line = await raceExit(
        child,
        child.stdout.waitFor(
          (l) => /"msg":"(listening|ready)/.test(l),
          options.startTimeoutMs,
          spec.name,
        ),
      );
      const port = (JSON.parse(line) as { port?: number }).port;
      const url = spec.portEnv && port ? `http://127.0.0.1:${port}` : undefined;
      if (url) await waitServing(url, options.startTimeoutMs);
      endpoints.push({ name: spec.name, pid: child.process.pid ?? 0, ...(url ? { url } : {}) });
      say(`${spec.name.padEnd(14)} ${url ?? "(subscriber, no port)"}  pid ${child.process.pid}`);
    }

    const firstExit = Promise.race(
      children.map(async (child) => ({
        name: child.name,
        ...(await child.exited),
        lastLines: child.lastLines(),
      })),
    );
    return {
      natsUrl,
      endpoints,
      ...readToken(path.join(dataDir, "admin.token")),
      firstExit,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

function readToken(file: string): { adminToken?: string } {
  try {
    return { adminToken: readFileSync(file, "utf8").trim() };
  } catch {
    return {};
  }
}

async function raceExit<T>(child: Child, waiting: Promise<T>, hint = ""): Promise<T> {
  const died = child.exited.then(({ code, signal }) => {
    throw new StackError(
      `${child.name} exited (code ${code}${signal ? `, signal ${signal}` : ""}) before it was ready${
        hint ? `; ${hint}` : ""
      }\n${child.lastLines()}`,
    );
  });
  try {
    return await Promise.race([waiting, died]);
  } catch (error) {
    if (error instanceof StackError) throw error;
    throw new StackError(`${child.name} did not become ready: ${(error as Error).message}`);
  }
}

/** Waits for grpc.health.v1 to report SERVING, watching rather than polling. */
async function waitServing(url: string, timeoutMs: number): Promise<void> {
  const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
  for await (const res of health.watch({ service: "" }, { timeoutMs })) {
    if (res.status === HealthCheckResponse_ServingStatus.SERVING) return;
  }
  throw new StackError(`${url} never reported SERVING`);
}
