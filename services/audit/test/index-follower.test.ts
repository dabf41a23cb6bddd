import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ArchiveReader, type ChainHead } from "@toolmesh/archive";
import { createLogger } from "@toolmesh/log";
import { ensureStream } from "@toolmesh/nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM, auditLogStream } from "../src/audit-log.js";
import { IndexFollower } from "../src/index-follower.js";
import { LogReader } from "../src/log-reader.js";
import { type AuditBus, appendHistory, historyRecord, startAuditBus } from "./fixtures.js";

const log = createLogger("index-follower-test", "silent");
const encoder = new TextEncoder();
const decoder = new TextDecoder();

// The index follows the log with an ordered consumer, which nats.js finds again on its own after
// most faults. When it does not (a consumer that stops delivering while the server still sends
// its heartbeats, as a paused one does), the index fell behind until a restart; the follower's
// watch now follows the log again from where the index stopped.
describe("the audit index's reader of the log", () => {
  let bus: AuditBus;
  let dir: string;
  let follower: IndexFollower;
  beforeAll(async () => {
    bus = await startAuditBus();
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-index-follower-"));
    const jsm = await bus.nc.jetstreamManager();
    await ensureStream(jsm, auditLogStream({ replicas: 1, maxBytes: 0 }));
    const js = bus.nc.jetstream();
    follower = new IndexFollower({
      js,
      jsm,
      log,
      file: path.join(dir, "index.sqlite"),
      reader: new LogReader({ js, jsm, archive: new ArchiveReader(path.join(dir, "archive")) }),
      stallMs: 1000,
    });
    await follower.start();
  });
  afterAll(async () => {
    await follower?.stop();
    await bus?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it("follows the log again when its consumer stops delivering", async () => {
    const js = bus.nc.jetstream();
    const jsm = await bus.nc.jetstreamManager();
    const t0 = Date.now();
    let head: ChainHead = { sequence: 0n, hash: "" };
    head = await appendHistory(js, head, 0, 20, t0);
    await follower.waitFor((await jsm.streams.info(AUDIT_LOG_STREAM)).state.last_seq);
    expect(follower.resubscribed).toBe(0);

    // Pause the ordered consumer for an hour (nats-server 2.11+): it delivers nothing more.
    const consumers = [];
    for await (const info of jsm.consumers.list(AUDIT_LOG_STREAM)) consumers.push(info.name);
    expect(consumers).toHaveLength(1);
    const paused = await bus.nc.request(
      `$JS.API.CONSUMER.PAUSE.${AUDIT_LOG_STREAM}.${consumers[0]}`,
      encoder.encode(
        JSON.stringify({ pause_until: new Date(Date.now() + 3_600_000).toISOString() }),
      ),
    );
    expect(JSON.parse(decoder.decode(paused.data)).paused).toBe(true);

    head = await appendHistory(js, head, 20, 40, t0);
    const last = (await jsm.streams.info(AUDIT_LOG_STREAM)).state.last_seq;
    await follower.waitFor(last);
    expect(follower.resubscribed).toBeGreaterThanOrEqual(1);
    expect(follower.lastIndexedSeq).toBe(last);
    // Every record is in the index once: none skipped, none read twice.
    for (let i = 0; i < 40; i++) {
      const record = historyRecord(i, t0);
      expect(follower.records.has(record.id, record.callId), `record ${i}`).toBe(true);
    }
    expect(follower.records.count()).toBe(40);
    expect(follower.records.checkpoint().lastSeq).toBe(last);
  }, 60_000);
});
