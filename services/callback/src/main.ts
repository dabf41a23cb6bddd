import { authConfig, startServiceAuth } from "@toolmesh/auth";
import { commonConfig, int, loadConfig, loadOrExit, port } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { connectNats, ensureStream, streamDefinitions } from "@toolmesh/nats";
import { onShutdown } from "@toolmesh/server";
import { OutcomeBroadcaster } from "./broadcaster.js";
import { CallStore } from "./call-store.js";
import { createCallbackServer } from "./server.js";

const DAY_MS = 24 * 60 * 60 * 1000;

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    ...authConfig,
    port: port("TOOLMESH_CALLBACK_PORT", 7104),
    callTtlDays: int("TOOLMESH_CALLBACK_TTL_DAYS", 7, { min: 0, max: 3650 }),
  }),
);
const log = createLogger("callback", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-callback", log });
const jsm = await nc.jetstreamManager();
const js = nc.jetstream();
const streams = streamDefinitions({ replicas: config.jetstreamReplicas, maxAgeMs: 30 * DAY_MS });
for (const stream of [streams.outcome, streams.trace, streams.callback]) {
  await ensureStream(jsm, stream);
}
const calls = await CallStore.open(js, {
  replicas: config.jetstreamReplicas,
  ttlMs: config.callTtlDays * DAY_MS,
});
const broadcaster = new OutcomeBroadcaster({ js, jsm, calls, log });
await broadcaster.start();

const auth = await startServiceAuth({ config, nc, log });
const server = createCallbackServer({
  calls,
  nc,
  js,
  log,
  interceptors: [auth.interceptor],
  readMaxBytes: config.maxMessageBytes,
});
const listening = await server.listen(config.port, config.host);

onShutdown(log, async () => {
  await listening.close();
  await broadcaster.stop();
  auth.stop();
  await nc.drain();
});
