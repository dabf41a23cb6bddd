import { authConfig, startServiceAuth } from "@toolmesh/auth";
import { commonConfig, loadConfig, loadOrExit, port } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import {
  buckets,
  connectNats,
  ensureStream,
  loadWhenCreated,
  streamDefinitions,
} from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import { onShutdown } from "@toolmesh/server";
import type { NatsConnection } from "nats";
import { NatsRegistryEvents } from "./events.js";
import { createRegistryServer } from "./server.js";
import { KvRegistryStore } from "./store.js";
import { policyVisibility } from "./visibility.js";

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    ...authConfig,
    port: port("TOOLMESH_REGISTRY_PORT", 7101),
  }),
);
const log = createLogger("registry", config.logLevel);

const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-registry", log });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();
const streams = streamDefinitions({
  replicas: config.jetstreamReplicas,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
});
await ensureStream(jsm, streams.changes);
await ensureStream(jsm, streams.audit);

const store = await KvRegistryStore.open({ nc, replicas: config.jetstreamReplicas, log });
const auth = await startServiceAuth({ config, nc, log });
const policy = await watchPolicy(nc);

const server = createRegistryServer({
  store,
  events: new NatsRegistryEvents(js, log),
  visibility: policyVisibility(policy.current),
  log,
  interceptors: [auth.interceptor],
  readMaxBytes: config.maxMessageBytes,
});
const listening = await server.listen(config.port, config.host);

onShutdown(log, async () => {
  await listening.close();
  policy.stop();
  auth.stop();
  store.stop();
  await nc.drain();
});

/**
 * The grant snapshot agents' visibility is decided by. The Permission service owns the bucket;
 * until it exists there are no grants, so agents see no tools.
 */
async function watchPolicy(connection: NatsConnection) {
  let snapshot: PolicySnapshot | undefined;
  let stopped = false;
  const load = loadWhenCreated({
    nc: connection,
    bucket: buckets.permission.name,
    log,
    isStopped: () => stopped,
    meanwhile: "agents see no tools until it exists",
    readyMessage: "grant snapshot ready; agents see their tools",
    start: async (kv) => {
      const next = new PolicySnapshot(kv, log, connection);
      await next.start();
      if (stopped) next.stop();
      else snapshot = next;
    },
  });
  await load.firstAttempt;
  return {
    current: () => snapshot,
    stop() {
      stopped = true;
      snapshot?.stop();
    },
  };
}
