import { randomUUID } from "node:crypto";
import path from "node:path";
import { createSecretRedactor } from "@toolmesh/log";
import { ensureStream, holdLease } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { auditLogStream } from "./audit-log.js";
import { verifyChain } from "./chain-verifier.js";
import { auditConfig } from "./config.js";
import { IndexFollower } from "./index-follower.js";
import { AuditRecorder } from "./recorder.js";
import { RetentionWatch } from "./retention.js";
import { createAuditServer } from "./server.js";
import { indexedSpan, TraceReader } from "./trace-reader.js";

const DAY_MS = 24 * 60 * 60 * 1000;

await runService({
  name: "audit",
  config: auditConfig,
  streams: ["audit", "trace"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    const maxAgeMs = config.maxAgeDays * DAY_MS;
    await ensureStream(
      jsm,
      auditLogStream({ replicas: config.jetstreamReplicas, maxAgeMs, maxBytes: config.maxBytes }),
    );
    const file = config.indexPath ?? path.join(config.dataDir, "audit", "index.sqlite");
    const follower = new IndexFollower({ js, jsm, log, file });
    const opened = await follower.start();
    log.info({ ...opened, file }, opened.rebuilt ? "audit index rebuilt" : "audit index opened");
    const records = follower.records;
    const retention = new RetentionWatch({
      jsm,
      log,
      pruneBelow: (seq) => records.pruneBelow(seq),
      maxBytes: config.maxBytes,
      warnPercent: config.bytesWarnPercent,
      intervalMs: config.retentionCheckMs,
    });
    await retention.start();
    // Every replica serves queries from its own index; one at a time chains records (the
    // expected-sequence rule would keep two from forking the chain, the lease keeps them from
    // racing for every append), and a standby takes over within seconds when it goes.
    const chainWriter = await holdLease({
      nc,
      service: "audit",
      instance: randomUUID(),
      replicas: config.jetstreamReplicas,
      log,
      async work() {
        const recorder = new AuditRecorder({
          nc,
          js,
          jsm,
          isStored: (id, callId) => records.has(id, callId),
          redact: createSecretRedactor(config.redactKeys),
          log,
          onStored: ({ record, seq, data }) => follower.expect(record, seq, data),
        });
        await recorder.start();
        return () => recorder.stop();
      },
    });
    log.info({ ...retention.status, max_age_days: config.maxAgeDays }, "audit log ready");
    const server = createAuditServer({
      records,
      verifyChain: (from) => verifyChain(js, jsm, from, (s) => records.blockAtOrBefore(s)),
      traces: new TraceReader(nc, { span: (id) => indexedSpan(records, id) }),
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        retention.stop();
        await chainWriter.stop();
        await follower.stop();
      },
    };
  },
});
