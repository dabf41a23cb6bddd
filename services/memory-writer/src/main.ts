import { commonConfig, list, loadConfig, loadOrExit } from "@toolmesh/config";
import { createLogger, createSecretRedactor, defaultSecretKeyPatterns } from "@toolmesh/log";
import { connectNats, ensureStream, streamDefinitions } from "@toolmesh/nats";
import { onShutdown } from "@toolmesh/server";
import { MemoryStore } from "./memory-store.js";
import { MemoryWriter } from "./writer.js";

const DAY_MS = 24 * 60 * 60 * 1000;

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    redactKeys: list("TOOLMESH_MEMORY_REDACT_KEYS", defaultSecretKeyPatterns),
  }),
);
const log = createLogger("memory-writer", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-memory-writer", log });
const jsm = await nc.jetstreamManager();
const streams = streamDefinitions({ replicas: config.jetstreamReplicas, maxAgeMs: 30 * DAY_MS });
await ensureStream(jsm, streams.callback);
const store = await MemoryStore.open(config.dataDir);
const writer = new MemoryWriter({
  js: nc.jetstream(),
  jsm,
  store,
  redact: createSecretRedactor(config.redactKeys),
  log,
});
await writer.start();
// No RPC port: the launcher and tests wait for this line.
log.info({ dir: store.dir, calls_known: store.size }, "ready");

onShutdown(log, async () => {
  await writer.stop();
  await store.close();
  await nc.drain();
});
