import { authInterceptor, startServiceAuth } from "@toolmesh/auth";
import { loadConfig, loadOrExit } from "@toolmesh/config";
import { createLogger, type Logger } from "@toolmesh/log";
import { buckets, connectNats, ensureStream, KvSnapshot, streamDefinitions } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import { ToolSchema } from "@toolmesh/proto";
import { onShutdown } from "@toolmesh/server";
import type { KV, NatsConnection } from "nats";
import { cachedAuthenticator } from "./auth-cache.js";
import { type DispatcherConfig, dispatcherConfig } from "./config.js";
import { JetStreamPublisher } from "./event-publisher.js";
import { DISPATCHER_BUCKET, KvIdempotencyStore } from "./idempotency.js";
import { createDispatcher } from "./server.js";

/** A snapshot that arrives later; undefined until then. */
class LazySnapshot<T> {
  current: T | undefined;
  set(value: T): void {
    this.current = value;
  }
}

const config = loadOrExit(() => loadConfig<DispatcherConfig>(dispatcherConfig));
const log = createLogger("dispatcher", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-dispatcher", log });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();
const streams = streamDefinitions({
  replicas: config.jetstreamReplicas,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
});
for (const stream of [streams.trace, streams.audit, streams.outcome])
  await ensureStream(jsm, stream);

const idempotencyKv = await js.views.kv(DISPATCHER_BUCKET, {
  ttl: config.idempotencyWindowMs,
  history: 1,
  replicas: config.jetstreamReplicas,
});

// The registry and permission buckets belong to their services; until they exist (and their
// snapshots load) every call fails closed with UNAVAILABLE.
const tools = new LazySnapshot<KvSnapshot<typeof ToolSchema>>();
const policy = new LazySnapshot<PolicySnapshot>();
void loadWhenCreated(nc, buckets.registry.name, log, async (kv) => {
  const snapshot = new KvSnapshot(kv, buckets.registry.toolPrefix, ToolSchema, log);
  await snapshot.start();
  tools.set(snapshot);
  log.info({ tools: snapshot.size }, "registry snapshot loaded");
});
void loadWhenCreated(nc, buckets.permission.name, log, async (kv) => {
  const snapshot = new PolicySnapshot(kv, log);
  await snapshot.start();
  policy.set(snapshot);
  log.info("grant snapshot loaded");
});

const publisher = new JetStreamPublisher(nc);
const serviceAuth = await startServiceAuth({ config, nc, log });
const authenticate = cachedAuthenticator(serviceAuth.authenticate, config.authCacheMs);
const auth = {
  authenticate,
  interceptor: authInterceptor(authenticate),
  stop: () => serviceAuth.stop(),
};
const dispatcher = createDispatcher({
  tools: {
    get isReady() {
      return tools.current?.isReady ?? false;
    },
    get: (key) => tools.current?.get(key),
    values: () => tools.current?.values() ?? [].values(),
  },
  policy: {
    get isReady() {
      return policy.current?.isReady ?? false;
    },
    decide: (subject, tool, now) => {
      const current = policy.current;
      if (!current) throw new Error("grant snapshot not loaded");
      return current.decide(subject, tool, now);
    },
  },
  publisher,
  idempotency: new KvIdempotencyStore(idempotencyKv),
  auth,
  settings: config,
  log,
});
const listening = await dispatcher.server.listen(config.port, config.host);
const grpcPort =
  config.grpcPort >= 0 ? await dispatcher.listenGrpc(config.grpcPort, config.host) : undefined;

onShutdown(log, async () => {
  // Calls get a few seconds to finish; whatever still runs then ends INTERRUPTED "shutdown".
  const interrupt = setTimeout(() => dispatcher.running.interruptAll("shutdown"), 3000);
  await Promise.all([listening.close(), grpcPort?.close()]);
  clearTimeout(interrupt);
  await dispatcher.close();
  publisher.close();
  tools.current?.stop();
  policy.current?.stop();
  auth.stop();
  await nc.drain();
});

/** Binds to a bucket another service owns and starts a snapshot of it, retrying until both work. */
async function loadWhenCreated(
  connection: NatsConnection,
  bucket: string,
  logger: Logger,
  start: (kv: KV) => Promise<void>,
): Promise<void> {
  const jetstream = connection.jetstream();
  for (let attempt = 0; ; attempt++) {
    try {
      await start(await jetstream.views.kv(bucket, { bindOnly: true }));
      return;
    } catch (error) {
      if (attempt === 0 || attempt % 20 === 0) {
        logger.warn(
          { bucket, err: String(error) },
          "KV bucket not readable yet; calls fail closed until it is",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
