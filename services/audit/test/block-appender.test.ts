import { toBinary } from "@bufbuild/protobuf";
import { createLogger } from "@toolmesh/log";
import { ensureStream, JetStreamPublisher, PublishError } from "@toolmesh/nats";
import { AuditRecordSchema } from "@toolmesh/proto";
import { readLogMessage } from "@toolmesh/records";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM, auditLogStream } from "../src/audit-log.js";
import { BlockAppender } from "../src/block-appender.js";
import type { ReceivedRecord } from "../src/record-mapping.js";
import { type AuditBus, historyRecord, startAuditBus } from "./fixtures.js";

const log = createLogger("block-appender-test", "silent");

function received(i: number): ReceivedRecord {
  const record = historyRecord(i, Date.now());
  return { record, body: toBinary(AuditRecordSchema, record) };
}

describe("a block appender whose append got no answer", () => {
  let bus: AuditBus;
  beforeAll(async () => {
    bus = await startAuditBus();
    await ensureStream(
      await bus.nc.jetstreamManager(),
      auditLogStream({ replicas: 1, maxBytes: 0 }),
    );
  });
  afterAll(async () => {
    await bus?.destroy();
  });

  it("finds the records that append stored when it reads the head again", async () => {
    const jsm = await bus.nc.jetstreamManager();
    const real = new JetStreamPublisher(bus.nc, { ackTimeoutMs: 10_000 });
    // The second publish reaches JetStream and is stored, but its answer never comes back
    // (as when the ack is lost to a partition or a timeout).
    let publishes = 0;
    const publisher = {
      publish: (...args: Parameters<JetStreamPublisher["publish"]>) => {
        const ack = real.publish(...args);
        if (++publishes !== 2) return ack;
        return ack.then(() =>
          Promise.reject(new PublishError("timeout", "JetStream did not ack within 10000 ms")),
        );
      },
    };
    const found: string[] = [];
    const appender = new BlockAppender({
      jsm,
      publisher,
      log,
      maxBlockBytes: 512 * 1024,
      onStored: () => {},
      onFound: (ids) => found.push(...ids),
    });
    await appender.refreshHead();

    const first = await appender.land(appender.send([received(1), received(2)]));
    expect(first).toEqual({ stored: [true, true] });
    const unanswered = await appender.land(appender.send([received(3), received(4)]));
    expect(unanswered.stored).toEqual([false, false]);
    expect(unanswered.error).toMatchObject({ name: "PublishError", failure: "timeout" });
    expect((await jsm.streams.info(AUDIT_LOG_STREAM)).state.messages).toBe(2);

    appender.stale = true;
    await appender.refreshHead();
    expect(found).toEqual(["hist-3", "hist-4"]);
    // Reading it again finds nothing new: the head is now past that block.
    found.length = 0;
    await appender.refreshHead();
    expect(found).toEqual([]);
  });

  it("reads the last messages back when it takes over with no head of its own", async () => {
    const jsm = await bus.nc.jetstreamManager();
    // The log holds the two blocks the test above stored: a writer that took over from the one
    // that stored them has no head yet, and its index may not have read them.
    const found: string[] = [];
    const successor = new BlockAppender({
      jsm,
      publisher: new JetStreamPublisher(bus.nc, { ackTimeoutMs: 10_000 }),
      log,
      maxBlockBytes: 512 * 1024,
      onStored: () => {},
      onFound: (ids) => found.push(...ids),
    });
    await successor.refreshHead();
    expect(found).toEqual(["hist-1", "hist-2", "hist-3", "hist-4"]);
  });

  it("appends nothing on a head it could not read: it waits for the real one", async () => {
    const jsm = await bus.nc.jetstreamManager();
    const real = new JetStreamPublisher(bus.nc, { ackTimeoutMs: 10_000 });
    // The stream answers its info but not the read of its last message, as a stream between
    // leaders (no responders, 503) does after a partition.
    let refuse = true;
    const between = Object.assign(new Error("503"), { code: "503" });
    const flaky = {
      streams: {
        info: (...args: Parameters<typeof jsm.streams.info>) => jsm.streams.info(...args),
        getMessage: (...args: Parameters<typeof jsm.streams.getMessage>) =>
          refuse ? Promise.reject(between) : jsm.streams.getMessage(...args),
      },
    } as unknown as typeof jsm;
    const stored: bigint[] = [];
    const appender = new BlockAppender({
      jsm: flaky,
      publisher: real,
      log,
      maxBlockBytes: 512 * 1024,
      onStored: (s) => stored.push(s.record.sequence),
    });
    const before = await jsm.streams.info(AUDIT_LOG_STREAM);
    const last = await jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: before.state.last_seq });
    const head = readLogMessage(last.header, last.data).at(-1)?.record;
    // It used to chain on a made-up head (the stream sequence, an empty hash): a fork.
    await expect(appender.refreshHead()).rejects.toBe(between);
    expect(appender.stale).toBe(true);

    refuse = false;
    await appender.refreshHead();
    expect(appender.stale).toBe(false);
    const landed = await appender.land(appender.send([received(5)]));
    expect(landed).toEqual({ stored: [true] });
    // The new record follows the last one stored, in sequence and hash.
    expect(stored).toEqual([(head?.sequence ?? 0n) + 1n]);
    const after = await jsm.streams.getMessage(AUDIT_LOG_STREAM, {
      seq: before.state.last_seq + 1,
    });
    expect(readLogMessage(after.header, after.data)[0]?.record.prevHash).toBe(head?.hash);
  });
});
