import { createSecretRedactor } from "@toolmesh/log";
import { ensureStream } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { AuditLog, auditLogStream } from "./audit-log.js";
import { auditConfig } from "./config.js";
import { AuditRecorder } from "./recorder.js";
import { createAuditServer } from "./server.js";
import { TraceReader } from "./trace-reader.js";

const DAY_MS = 24 * 60 * 60 * 1000;

await runService({
  name: "audit",
  config: auditConfig,
  streams: ["audit", "trace"],
  async start({ config, log, js, jsm, authenticatedRpc }) {
    const maxAgeMs = config.maxAgeDays * DAY_MS;
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
    const server = createAuditServer({
      auditLog,
      traces: new TraceReader(js, jsm),
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        await recorder.stop();
        auditLog.stop();
      },
    };
  },
});
