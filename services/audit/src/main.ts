import { randomUUID } from "node:crypto";
import path from "node:path";
import { ArchiveReader } from "@toolmesh/archive";
import { createSecretRedactor } from "@toolmesh/log";
import { ensureStream, holdLease } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { startArchiving } from "./archiving.js";
import { auditLogStream } from "./audit-log.js";
import { verifyChain } from "./chain-verifier.js";
import { archiveSettings, auditConfig } from "./config.js";
import { IndexFollower } from "./index-follower.js";
import { LogReader } from "./log-reader.js";
import { AuditRecorder } from "./recorder.js";
import { RetentionWatch } from "./retention.js";
import { createAuditServer } from "./server.js";
import { indexedSpan, TraceReader } from "./trace-reader.js";

await runService({
  name: "audit",
  config: auditConfig,
  streams: ["audit", "trace"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    await ensureStream(
      jsm,
      auditLogStream({ replicas: config.jetstreamReplicas, maxBytes: config.maxBytes }),
    );
    const archive = archiveSettings(config);
    // The log and, below its hot window, the archive: what every reader of records reads.
    const reader = new LogReader({ js, jsm, archive: new ArchiveReader(archive.dir) });
    const file = config.indexPath ?? path.join(config.dataDir, "audit", "index.sqlite");
    const follower = new IndexFollower({ js, jsm, log, file, reader });
    const opened = await follower.start();
    log.info({ ...opened, file }, opened.rebuilt ? "audit index rebuilt" : "audit index opened");
    const records = follower.records;
    const retention = new RetentionWatch({
      jsm,
      log,
      archive: reader.archive,
      floor: () => reader.floor(),
      pruneBelow: (seq) => records.pruneBelow(seq),
      intervalMs: config.retentionCheckMs,
    });
    await retention.start();
    // Every replica serves queries from its own index; one at a time chains records and archives
    // them (the expected-sequence rule would keep two from forking the chain, the lease keeps them
    // from racing for every append), and a standby takes over within seconds when it goes.
    const chainWriter = await holdLease({
      nc,
      service: "audit",
      instance: randomUUID(),
      replicas: config.jetstreamReplicas,
      log,
      async work() {
        const archiving = await startArchiving({
          nc,
          js,
          jsm,
          log,
          replicas: config.jetstreamReplicas,
          archive: {
            ...archive,
            onSealed: () => void retention.check(),
            onDeleted: () => void retention.check(),
          },
        });
        const recorder = new AuditRecorder({
          nc,
          js,
          jsm,
          isStored: (id, callId) => records.has(id, callId),
          redact: createSecretRedactor(config.redactKeys),
          log,
          onStored: ({ record, seq, data }) => follower.expect(record, seq, data),
          room: archiving.room,
        });
        await recorder.start();
        return async () => {
          archiving.stopRoom();
          await recorder.stop();
          await archiving.stop();
        };
      },
    });
    log.info(
      {
        ...retention.status,
        archive_dir: archive.dir,
        archive_max_age_days: config.archiveMaxAgeDays,
      },
      "audit log ready",
    );
    const server = createAuditServer({
      records,
      verifyChain: (from) => verifyChain(reader, from, (s) => records.blockAtOrBefore(s)),
      traces: new TraceReader(nc, { span: (id) => indexedSpan(records, id) }),
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        retention.stop();
        await chainWriter.stop();
        await follower.stop();
        await reader.archive.close();
      },
    };
  },
});
