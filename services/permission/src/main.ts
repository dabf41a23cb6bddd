import { authConfig, startServiceAuth } from "@toolmesh/auth";
import { commonConfig, loadConfig, loadOrExit, port } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { connectNats, ensureStream, streamDefinitions } from "@toolmesh/nats";
import { onShutdown } from "@toolmesh/server";
import { bootstrapKeys } from "./bootstrap.js";
import { ChangePublisher } from "./events.js";
import { createPermissionServer } from "./server.js";
import { PermissionStore } from "./store.js";
import { ToolCatalog } from "./tool-catalog.js";

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    ...authConfig,
    port: port("TOOLMESH_PERMISSION_PORT", 7102),
  }),
);
const log = createLogger("permission", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-permission", log });
const jsm = await nc.jetstreamManager();
const streams = streamDefinitions({
  replicas: config.jetstreamReplicas,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
});
await ensureStream(jsm, streams.changes);
await ensureStream(jsm, streams.audit);

const store = await PermissionStore.open(nc, config.jetstreamReplicas, log);
const events = new ChangePublisher(nc.jetstream(), log);
await bootstrapKeys({ store, events, dataDir: config.dataDir, log });
const tools = new ToolCatalog(nc, log);
await tools.start();
const auth = await startServiceAuth({ config, nc, log });

const server = createPermissionServer({
  store,
  events,
  tools,
  log,
  interceptors: [auth.interceptor],
  readMaxBytes: config.maxMessageBytes,
});
const listening = await server.listen(config.port, config.host);

onShutdown(log, async () => {
  await listening.close();
  auth.stop();
  tools.stop();
  store.stop();
  await nc.drain();
});
