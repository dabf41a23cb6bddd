import { authConfig, startServiceAuth } from "@toolmesh/auth";
import { commonConfig, int, list, loadConfig, loadOrExit, port } from "@toolmesh/config";
import { createLogger, createSecretRedactor, defaultSecretKeyPatterns } from "@toolmesh/log";
import { connectNats, ensureStream, streamDefinitions } from "@toolmesh/nats";
import { onShutdown } from "@toolmesh/server";
import { AuditLog, auditLogStream } from "./audit-log.js";
import { AuditRecorder } from "./recorder.js";
import { createAuditServer } from "./server.js";
import { TraceReader } from "./trace-reader.js";

const DAY_MS = 24 * 60 * 60 * 1000;

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    ...authConfig,
    port: port("TOOLMESH_AUDIT_PORT", 7103),
    maxAgeDays: int("TOOLMESH_AUDIT_MAX_AGE_DAYS", 365, { min: 0, max: 36500 }),
    redactKeys: list("TOOLMESH_AUDIT_REDACT_KEYS", defaultSecretKeyPatterns),
  }),
);
const log = createLogger("audit", config.logLevel);
const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-audit", log });
const jsm = await nc.jetstreamManager();
const js = nc.jetstream();
const streams = streamDefinitions({ replicas: config.jetstreamReplicas, maxAgeMs: 30 * DAY_MS });
const maxAgeMs = config.maxAgeDays * DAY_MS;
await ensureStream(jsm, streams.audit);
await ensureStream(jsm, streams.trace);
await ensureStream(jsm, auditLogStream({ replicas: config.jetstreamReplicas, maxAgeMs }));

const auditLog = new AuditLog(js, jsm, log, maxAgeMs);
await auditLog.start();
const recorder = new AuditRecorder({
  js,
  jsm,
  auditLog,
  redact: createSecretRedactor(config.redactKeys),
  log,
});
await recorder.start();
log.info({ records: auditLog.size, max_age_days: config.maxAgeDays }, "audit log loaded");

const auth = await startServiceAuth({ config, nc, log });
const server = createAuditServer({
  auditLog,
  traces: new TraceReader(js, jsm),
  log,
  interceptors: [auth.interceptor],
  readMaxBytes: config.maxMessageBytes,
});
const listening = await server.listen(config.port, config.host);

onShutdown(log, async () => {
  await listening.close();
  await recorder.stop();
  auditLog.stop();
  auth.stop();
  await nc.drain();
});
