import { randomUUID } from "node:crypto";
import path from "node:path";
import { createSecretRedactor } from "@toolmesh/log";
import {
  buckets,
  ensureStream,
  holdLease,
  JetStreamPublisher,
  loadWhenCreated,
} from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { auditLogStream } from "./audit-log.js";
import { CallReaders } from "./call-readers.js";
import { verifyChain } from "./chain-verifier.js";
import { auditConfig } from "./config.js";
import { IndexFollower } from "./index-follower.js";
import { OpenCallSweeper } from "./open-call-sweeper.js";
import { AuditRecorder } from "./recorder.js";
import { RetentionWatch } from "./retention.js";
import { createAuditServer } from "./server.js";

const DAY_MS = 24 * 60 * 60 * 1000;

await runService({
  name: "audit",
  config: auditConfig,
  streams: ["records"],
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
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000 });
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
        // Calls left open are closed by the writer of the chain, one sweeper at a time. It asks
        // the Dispatchers' heartbeats, whose bucket only the Dispatcher may create: it starts
        // once the bucket exists, while the chain is written from the start.
        let sweeper: OpenCallSweeper | undefined;
        let stopped = false;
        loadWhenCreated({
          nc,
          bucket: buckets.dispatchers.name,
          log,
          isStopped: () => stopped,
          meanwhile: "calls left open are closed once a Dispatcher has created it",
          readyMessage: "closing calls left open by a Dispatcher that vanished",
          async start(heartbeats) {
            if (stopped) return;
            sweeper = new OpenCallSweeper({
              index: records,
              heartbeats,
              publisher,
              settings: { ...config, intervalMs: config.sweepIntervalMs },
              log,
            });
            sweeper.start();
          },
        });
        return async () => {
          stopped = true;
          await sweeper?.stop();
          await recorder.stop();
        };
      },
    });
    log.info({ ...retention.status, max_age_days: config.maxAgeDays }, "audit log ready");
    const calls = new CallReaders({ index: records, progress: follower, jsm, log });
    // Every replica answers the Dispatcher's and Callback's lookups of a call from its index.
    const lookups = calls.answerLookups(nc);
    const server = createAuditServer({
      records,
      verifyChain: (from) => verifyChain(js, jsm, from, (s) => records.blockAtOrBefore(s)),
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
      },
    };
  },
});
