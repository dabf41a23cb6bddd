import { ensureStream, streamDefinitions } from "@toolmesh/nats";
import { connect, type JetStreamClient, type JetStreamManager, type NatsConnection } from "nats";
import { TEST_JS_OPTIONS } from "./jetstream.js";
import { startNats, type TestNats } from "./nats-server.js";

/** A stream of toolmesh's, by its key in streamDefinitions(). */
export type StreamKey = keyof ReturnType<typeof streamDefinitions>;

/** A nats-server of a test's own with the streams it needs, and a client on it. */
export interface TestBus {
  nats: TestNats;
  /** The test's own connection (every permission). */
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** JetStream with the tests' ack timeout (TEST_JS_OPTIONS). */
  js: JetStreamClient;
  /** Closes the client, stops the server and deletes its store. */
  destroy(): Promise<void>;
}

export interface TestBusOptions {
  /** Streams made before the test starts, as the services define them. */
  streams?: StreamKey[];
  /**
   * Keep reconnecting quickly, for a test that stops and starts nats-server: a request made
   * while the client reconnects would otherwise wait out nats.js's 2 s delay.
   */
  reconnect?: boolean;
}

/** Starts nats-server on a free port and a temp store, connects, and makes the given streams. */
export async function startTestBus(options: TestBusOptions = {}): Promise<TestBus> {
  const nats = await startNats();
  try {
    const nc = await connect({
      servers: nats.url,
      ...(options.reconnect ? { maxReconnectAttempts: -1, reconnectTimeWait: 100 } : {}),
    });
    const jsm = await nc.jetstreamManager();
    const definitions = streamDefinitions();
    for (const key of options.streams ?? []) await ensureStream(jsm, definitions[key]);
    return {
      nats,
      nc,
      jsm,
      js: nc.jetstream(TEST_JS_OPTIONS),
      async destroy() {
        await nc.close().catch(() => {});
        await nats.destroy();
      },
    };
  } catch (error) {
    await nats.destroy();
    throw error;
  }
}
