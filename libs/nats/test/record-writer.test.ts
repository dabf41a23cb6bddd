import {
  JetStreamPublisher,
  PublishError,
  RecordWriteError,
  RecordWriter,
  type RecordWriterOptions,
} from "@toolmesh/nats";
import { encodeRecords, recordSlices } from "@toolmesh/records";
import { eventually, startNats, type TestNats } from "@toolmesh/testkit";
import {
  connect,
  DiscardPolicy,
  type JetStreamManager,
  type NatsConnection,
  RetentionPolicy,
} from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const encode = (text: string) => new TextEncoder().encode(text);
const decode = (data: Uint8Array) => new TextDecoder().decode(data);

/**
 * Group commit of records against a real nats-server: records written together share a batch
 * message (one stored write), batches wait while `maxInFlight` are unacked, a batch whose ack was
 * lost is sent again unchanged and stored once, and a full stream is told apart from a silence.
 */
describe("the record writer", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let publisher: JetStreamPublisher;

  const writer = (subject: string, options: Partial<RecordWriterOptions> = {}) =>
    new RecordWriter(publisher, {
      subject,
      type: "toolmesh.events.v1.RecordBatch",
      msgIdPrefix: `test-${subject}`,
      encode: encodeRecords,
      maxBatchBytes: 64 * 1024,
      maxInFlight: 2,
      retryForMs: 20_000,
      classify: (error) =>
        error instanceof PublishError && error.failure === "full"
          ? "full"
          : error instanceof PublishError &&
              (error.failure === "refused" || error.failure === "no-stream")
            ? "refused"
            : "maybe",
      ...options,
    });

  /** Every batch stored on a stream: the records of each, decoded as text. */
  const batches = async (stream: string): Promise<string[][]> => {
    const { state } = await jsm.streams.info(stream);
    const out: string[][] = [];
    for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
      const msg = await jsm.streams.getMessage(stream, { seq });
      out.push(recordSlices(msg.data).map(decode));
    }
    return out;
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    jsm = await nc.jetstreamManager();
    publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 2000 });
  });
  afterAll(async () => {
    publisher?.close();
    await nc?.close();
    await nats?.destroy();
  });

  it("puts records written together in one batch, and the next ones in as few as can wait", async () => {
    await jsm.streams.add({ name: "RW_GROUP", subjects: ["rw.group"] });
    const w = writer("rw.group", { maxInFlight: 1 });
    // One turn of the event loop: one batch.
    await Promise.all(Array.from({ length: 50 }, (_, i) => w.write(encode(`a${i}`))));
    expect(await batches("RW_GROUP")).toEqual([Array.from({ length: 50 }, (_, i) => `a${i}`)]);
    // Written over many turns while one batch is in flight: they coalesce into few batches.
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      writes.push(w.write(encode(`b${i}`)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(writes);
    const stored = (await batches("RW_GROUP")).slice(1);
    expect(stored.flat()).toEqual(Array.from({ length: 200 }, (_, i) => `b${i}`));
    expect(stored.length).toBeLessThan(200);
    expect(w.backlog).toBe(0);
  });

  it("sends a batch whose ack was lost again after nats-server restarts, and it is stored once", async () => {
    await jsm.streams.add({
      name: "RW_RESEND",
      subjects: ["rw.resend"],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: 120_000_000_000,
    });
    const w = writer("rw.resend");
    await w.write(encode("before"));
    // nats-server dies with batches on the wire: their acks never come.
    const pending = Array.from({ length: 20 }, (_, i) => w.write(encode(`during${i}`)));
    await nats.kill();
    await nats.start();
    await Promise.all(pending);
    const stored = (await batches("RW_RESEND")).flat();
    expect(stored[0]).toBe("before");
    // Every record stored exactly once, in the order written.
    expect(stored.slice(1)).toEqual(Array.from({ length: 20 }, (_, i) => `during${i}`));
  }, 60_000);

  it("fails records as `full` when the stream has no room, and stores nothing of them", async () => {
    await jsm.streams.add({
      name: "RW_FULL",
      subjects: ["rw.full"],
      max_bytes: 4096,
      discard: DiscardPolicy.New,
    });
    const w = writer("rw.full");
    const error = await w.write(new Uint8Array(8192)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RecordWriteError);
    expect((error as RecordWriteError).failure).toBe("full");
    expect((await jsm.streams.info("RW_FULL")).state.messages).toBe(0);
  });

  it("fails records as `unknown` when no ack comes within the retry budget", async () => {
    // No stream listens and the publisher's own budget is spent: a silence, not a refusal.
    const w = writer("rw.nobody", {
      retryForMs: 500,
      classify: () => "maybe",
    });
    const error = await w.write(encode("lost")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as RecordWriteError).failure).toBe("unknown");
    expect((error as RecordWriteError).message).toMatch(/may or may not be stored/);
  });

  it("goes on sending a batch given up as `unknown` once NATS is back, and it is stored once", async () => {
    await jsm.streams.add({
      name: "RW_LATE",
      subjects: ["rw.late"],
      duplicate_window: 120_000_000_000,
    });
    const w = writer("rw.late", { retryForMs: 500 });
    await nats.kill();
    const error = await w.write(encode("late")).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Its writer was answered: nobody knows yet whether it is stored.
    expect((error as RecordWriteError).failure).toBe("unknown");
    expect(w.backlog).toBe(1);
    await nats.start();
    await eventually(async () => expect(await batches("RW_LATE")).toEqual([["late"]]), 20_000);
    await eventually(async () => expect(w.backlog).toBe(0), 5_000);
  }, 60_000);
});
