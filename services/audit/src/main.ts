import { randomUUID } from "node:crypto";
import path from "node:path";
import { ArchiveReader } from "@toolmesh/archive";
import { createSecretRedactor } from "@toolmesh/log";
import { buckets, ensureStream, holdLease, JetStreamPublisher, retrySetup } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { startArchiving } from "./archiving.js";
import { auditLogStream } from "./audit-log.js";
import { CallReaders } from "./call-readers.js";
import { verifyChain } from "./chain-verifier.js";
import { archiveSettings, auditConfig } from "./config.js";
import { IndexFollower } from "./index-follower.js";
import { upgradeLegacyStreams } from "./legacy-upgrade.js";
import { LogReader } from "./log-reader.js";
import { OpenCallSweeper } from "./open-call-sweeper.js";
import { AuditRecorder } from "./recorder.js";
import { RecordsTrim } from "./records-trim.js";
import { RetentionWatch } from "./retention.js";
import { createAuditServer } from "./server.js";
import { StoredRecords } from "./stored-records.js";

await runService({
  name: "audit",
  config: auditConfig,
  streams: ["records"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    const logStream = auditLogStream({
      replicas: config.jetstreamReplicas,
      maxBytes: config.maxBytes,
    });
    await retrySetup(() => ensureStream(jsm, logStream));
    const archive = archiveSettings(config);
    // The log and, below its hot window, the archive: what every reader of records reads.
    const reader = new LogReader({ js, jsm, archive: new ArchiveReader(archive.dir) });
    const file = config.indexPath ?? path.join(config.dataDir, "audit", "index.sqlite");
    const follower = new IndexFollower({ js, jsm, log, file, reader });
    const opened = await follower.start();
    log.info({ ...opened, file }, opened.rebuilt ? "audit index rebuilt" : "audit index opened");
    const records = follower.records;
    const stored = new StoredRecords(reader);
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
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000 });
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
          readTogether: (read) => records.readTogether(read),
          redact: createSecretRedactor(config.redactKeys),
          log,
          onStored: ({ record, seq, pos, data }) => follower.expect(record, seq, pos, data),
          room: archiving.room,
          lingerMs: config.lingerMs,
          holdMs: config.mergeMs,
        });
        await recorder.start();
        // A data directory of an earlier version: its unchained records and running calls.
        await upgradeLegacyStreams({
          js,
          jsm,
          publisher,
          hasEnd: (callId) => records.hasEnd(callId),
          log,
        });
        // Calls left open are closed by the writer of the chain, one sweeper at a time. It asks
        // the Dispatchers' heartbeats, whose bucket only the Dispatcher may create: it binds the
        // bucket once there is a call to close (and tries again at the next sweep if none exists).
        const sweeper = new OpenCallSweeper({
          index: records,
          stored,
          heartbeats: () => js.views.kv(buckets.dispatchers.name, { bindOnly: true }),
          publisher,
          settings: { ...config, intervalMs: config.sweepIntervalMs },
          log,
        });
        sweeper.start();
        // The batches chained leave the record stream in bulk.
        const trim = new RecordsTrim({ jsm, log });
        trim.start();
        return async () => {
          archiving.stopRoom();
          await trim.stop();
          await sweeper.stop();
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
    const calls = new CallReaders({ index: records, stored, progress: follower, jsm, log });
    // Every replica answers the Dispatcher's and Callback's lookups of a call from its index.
    const lookups = calls.answerLookups(nc);
    const server = createAuditServer({
      records,
      verifyChain: (from) => verifyChain(reader, from, (s) => records.blockAtOrBefore(s)),
      stored,
      calls,
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        await lookups.drain();
        retention.stop();
        await chainWriter.stop();
        publisher.close();
        await follower.stop();
        await reader.archive.close();
      },
    };
  },
});
