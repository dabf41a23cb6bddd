import { startServiceAuth } from "@toolmesh/auth";
import { loadConfig, loadOrExit } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { connectNats, ensureStream, streamDefinitions } from "@toolmesh/nats";
import { onShutdown } from "@toolmesh/server";
import { type DispatcherConfig, dispatcherConfig } from "./config.js";
import { JetStreamPublisher } from "./event-publisher.js";
import { DISPATCHER_BUCKET, KvIdempotencyStore } from "./idempotency.js";
import { createDispatcher } from "./server.js";
import { startSnapshots } from "./snapshots.js";

const config = loadOrExit(() => loadConfig<DispatcherConfig>(dispatcherConfig));
const log = createLogger("dispatcher", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-dispatcher", log });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();
const streams = streamDefinitions({
  replicas: config.jetstreamReplicas,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
});
for (const stream of [streams.trace, streams.audit, streams.outcome]) {
  await ensureStream(jsm, stream);
}
const idempotencyKv = await js.views.kv(DISPATCHER_BUCKET, {
  ttl: config.idempotencyWindowMs,
  history: 1,
  replicas: config.jetstreamReplicas,
});
const snapshots = startSnapshots(nc, log);
const publisher = new JetStreamPublisher(nc);
const serviceAuth = await startServiceAuth({ config, nc, log });

const dispatcher = createDispatcher({
  tools: snapshots.tools,
  policy: snapshots.policy,
  publisher,
  idempotency: new KvIdempotencyStore(idempotencyKv),
  auth: serviceAuth,
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
  snapshots.stop();
  serviceAuth.stop();
  await nc.drain();
});
