import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { ServiceProcess } from "@toolmesh/launcher";
import { portEnvOf, startService } from "./service-process.js";
import { type StreamKey, startTestBus, type TestBus } from "./test-bus.js";
import { type TestSigner, testSigner } from "./test-signer.js";

export interface OneServiceOptions {
  /** The streams the service reads, made before it starts. */
  streams?: StreamKey[];
  /** Environment of every start, over NATS_URL, the port (0) and the JWT secret. */
  env?: Record<string, string>;
  /** A substring of the log line that says it is ready ("listening" or "ready" when unset). */
  readyPattern?: string;
  timeoutMs?: number;
  /** Starts the process at once (the default); false leaves it to start(). */
  started?: boolean;
  /** The test's client reconnects quickly, for a test that restarts nats-server. */
  reconnect?: boolean;
}

/**
 * One service as its own process on port 0 against a nats-server of its own, with the streams it
 * reads and a JWT secret, and tokens signed with that secret.
 */
export interface OneService extends TestBus, TestSigner {
  /** The process of the last start(); throws before the first. */
  readonly process: ServiceProcess;
  /** Its address (http://127.0.0.1:<port>). */
  readonly url: string;
  /** Starts a new process (after stop(), or the first with started: false), with `env` on top. */
  start(env?: Record<string, string>, options?: { timeoutMs?: number }): Promise<ServiceProcess>;
  /** A client of the service over gRPC, at its current address. */
  client<S extends DescService>(service: S): Client<S>;
  /** Stops the process, then the bus (its store deleted). */
  stop(): Promise<void>;
}

/** Starts a nats-server with the streams, and the service `name` (services/<name>) against it. */
export async function startOneService(
  name: string,
  options: OneServiceOptions = {},
): Promise<OneService> {
  const bus = await startTestBus({
    ...(options.streams ? { streams: options.streams } : {}),
    ...(options.reconnect ? { reconnect: true } : {}),
  });
  const signer = testSigner();
  let current: ServiceProcess | undefined;
  const running = () => {
    if (!current) throw new Error(`${name} is not started; call start()`);
    return current;
  };
  const start = async (env: Record<string, string> = {}, only: { timeoutMs?: number } = {}) => {
    current = await startService(
      name,
      {
        NATS_URL: bus.nats.url,
        [portEnvOf(name)]: "0",
        TOOLMESH_JWT_SECRET: signer.secret,
        ...options.env,
        ...env,
      },
      {
        ...(options.readyPattern ? { readyPattern: options.readyPattern } : {}),
        ...((only.timeoutMs ?? options.timeoutMs)
          ? { timeoutMs: only.timeoutMs ?? options.timeoutMs }
          : {}),
      },
    );
    return current;
  };
  try {
    if (options.started !== false) await start();
  } catch (error) {
    await bus.destroy();
    throw error;
  }
  return {
    ...bus,
    ...signer,
    get process() {
      return running();
    },
    get url() {
      return running().url;
    },
    start,
    client: (service) => createClient(service, createGrpcTransport({ baseUrl: running().url })),
    async stop() {
      await current?.stop();
      await bus.destroy();
    },
  };
}
