import { create, fromBinary } from "@bufbuild/protobuf";
import {
  JetStreamApiCodes,
  JetStreamPublisher,
  jetStreamErrorCode,
  type PublishCapacity,
  PublishError,
  TYPE_HEADER,
} from "@toolmesh/nats";
import { CallStatus, OutcomeSchema } from "@toolmesh/proto";
import { eventually, startTestBus, type TestBus } from "@toolmesh/testkit";
import {
  connect,
  DiscardPolicy,
  type JetStreamManager,
  type NatsConnection,
  headers as natsHeaders,
} from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const encode = (text: string) => new TextEncoder().encode(text);
const decode = (data: Uint8Array) => new TextDecoder().decode(data);

/** The PublishError a publish failed with (or a test failure if it did not fail). */
async function failureOf(publish: Promise<unknown>): Promise<PublishError> {
  const error = await publish.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PublishError);
  return error as PublishError;
}

/**
 * The one JetStream publisher the Dispatcher and Audit use, against a real nats-server: acks
 * matched to their publishes, a message no stream took sent again until one does, refusals and
 * silences told apart by kind, and a lost connection failing what waits in the Dispatcher's mode.
 */
describe("the JetStream publisher", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    bus = await startTestBus();
    ({ nc, jsm } = bus);
  });

  afterAll(async () => {
    await bus?.destroy();
  });

  it("matches each ack to its own publish with thousands in flight", async () => {
    await jsm.streams.add({ name: "PUB_EVEN", subjects: ["pub.even.>"] });
    await jsm.streams.add({ name: "PUB_ODD", subjects: ["pub.odd.>"] });
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 60_000 });
    const n = 4000;
    // Two streams, so an ack's sequence is not its publish's place in the whole run.
    const acks = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        publisher.publish(`pub.${i % 2 === 0 ? "even" : "odd"}.${i}`, encode(String(i))),
      ),
    );
    publisher.close();
    const stored = new Map<string, string>();
    for (const stream of ["PUB_EVEN", "PUB_ODD"]) {
      const messages = await (await nc.jetstream().consumers.get(stream)).fetch({
        max_messages: n / 2,
        expires: 10_000,
      });
      for await (const m of messages) stored.set(`${stream}:${m.seq}`, decode(m.data));
    }
    expect(stored.size).toBe(n);
    // Each publish's ack names the sequence its own message was stored at.
    expect(
      acks.map((ack, i) => stored.get(`${i % 2 === 0 ? "PUB_EVEN" : "PUB_ODD"}:${ack.seq}`)),
    ).toEqual(Array.from({ length: n }, (_, i) => String(i)));
    expect(acks.every((ack) => !ack.duplicate)).toBe(true);
  });

  it("sends a message no stream took again until a stream takes it, and stores it once", async () => {
    // A connection of its own, whose counts are the publisher's messages alone.
    const own = await connect({ servers: bus.nats.url });
    const publisher = new JetStreamPublisher(own, {
      ackTimeoutMs: 20_000,
      betweenLeadersBudgetMs: 15_000,
    });
    const ack = publisher.publish("pub.late.1", encode("late"));
    // Sent, answered 503 (no stream listens), and sent again.
    await eventually(async () => {
      expect(own.stats().inMsgs).toBeGreaterThanOrEqual(1);
      expect(own.stats().outMsgs).toBeGreaterThanOrEqual(2);
    });
    await jsm.streams.add({ name: "PUB_LATE", subjects: ["pub.late.>"] });
    expect(await ack).toEqual({ seq: 1, duplicate: false });
    publisher.close();
    await own.close();
    const { state } = await jsm.streams.info("PUB_LATE");
    expect(state.messages).toBe(1);
  });

  it("fails as no-stream once the between-leaders budget is spent: nothing was stored", async () => {
    const own = await connect({ servers: bus.nats.url });
    const publisher = new JetStreamPublisher(own, {
      ackTimeoutMs: 10_000,
      betweenLeadersBudgetMs: 1000,
    });
    const startedAt = Date.now();
    const error = await failureOf(publisher.publish("pub.nowhere.1", encode("lost")));
    const elapsedMs = Date.now() - startedAt;
    publisher.close();
    expect(error.failure).toBe("no-stream");
    expect(error.message).toMatch(
      /no stream took the message on pub\.nowhere\.1 .* nothing was stored/,
    );
    // Sent again, after the between-leaders backoff, before the budget ran out.
    expect(own.stats().outMsgs).toBeGreaterThanOrEqual(2);
    expect(elapsedMs).toBeGreaterThanOrEqual(100);
    expect(elapsedMs).toBeLessThan(10_000);
    await own.close();
  });

  it("reports a stream at its limit as full, by its JetStream code, and tells the capacity hook", async () => {
    await jsm.streams.add({
      name: "PUB_FULL",
      subjects: ["pub.full.>"],
      max_msgs: 1,
      discard: DiscardPolicy.New,
    });
    const refused: string[] = [];
    const consumed: string[] = [];
    const capacity: PublishCapacity = {
      full: undefined,
      consume: (subject) => consumed.push(subject),
      refused: (reason) => refused.push(reason),
    };
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000, capacity });
    expect(await publisher.publish("pub.full.1", encode("first"))).toEqual({
      seq: 1,
      duplicate: false,
    });
    const error = await failureOf(publisher.publish("pub.full.2", encode("second")));
    publisher.close();
    expect(error.failure).toBe("full");
    expect(error.api_error?.err_code).toBe(10077);
    expect(error.message).toContain("stream PUB_FULL has no room");
    expect(refused).toEqual([error.message]);
    expect(consumed).toEqual(["pub.full.1", "pub.full.2"]);
  });

  it("fails a publish no ack answers as timeout: it may or may not be stored", async () => {
    // A plain subscriber takes the message and never answers, as a stream whose ack is lost.
    const silent = nc.subscribe("pub.silent.>");
    let received = 0;
    void (async () => {
      for await (const _ of silent) received++;
    })();
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 300 });
    const error = await failureOf(publisher.publish("pub.silent.1", encode("unanswered")));
    publisher.close();
    silent.unsubscribe();
    expect(error.failure).toBe("timeout");
    expect(error.message).toContain("may or may not be stored");
    expect(received).toBe(1);
  });

  it("reports a message id the stream holds already as a duplicate, stored once", async () => {
    await jsm.streams.add({ name: "PUB_DEDUPE", subjects: ["pub.dedupe.>"] });
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000 });
    const outcome = create(OutcomeSchema, { callId: "call-1", status: CallStatus.SUCCESS });
    const publish = () =>
      publisher.publishMessage("pub.dedupe.call-1", OutcomeSchema, outcome, { msgId: "call-1" });
    expect(await publish()).toEqual({ seq: 1, duplicate: false });
    expect(await publish()).toEqual({ seq: 1, duplicate: true });
    publisher.close();
    expect((await jsm.streams.info("PUB_DEDUPE")).state.messages).toBe(1);
    const stored = await jsm.streams.getMessage("PUB_DEDUPE", { seq: 1 });
    expect(stored.header.get(TYPE_HEADER)).toBe(OutcomeSchema.typeName);
    expect(fromBinary(OutcomeSchema, stored.data).callId).toBe("call-1");
  });

  it("stores an atomic batch in one commit, and none of one that repeats a stored message id", async () => {
    await jsm.streams.add({
      name: "PUB_ATOMIC",
      subjects: ["pub.atomic.>"],
      allow_atomic: true,
    } as Parameters<typeof jsm.streams.add>[0]);
    const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000 });
    const message = (id: string) => {
      const headers = natsHeaders();
      headers.set("Nats-Msg-Id", id);
      return { subject: `pub.atomic.${id}`, data: encode(id), headers };
    };
    const batch = ["a", "b", "c"].map(message);
    expect(await publisher.publishAtomic("batch-1", batch)).toEqual({ seq: 3, duplicate: false });
    // The batch headers are stamped on the messages themselves.
    expect(batch[0]?.headers.get("Nats-Batch-Id")).toBe("batch-1");
    expect(batch[2]?.headers.get("Nats-Batch-Commit")).toBe("1");
    const repeated = await failureOf(publisher.publishAtomic("batch-2", ["c", "d"].map(message)));
    expect(repeated.failure).toBe("refused");
    expect(jetStreamErrorCode(repeated)).toBe(JetStreamApiCodes.AtomicBatchDuplicate);
    publisher.close();
    const { state } = await jsm.streams.info("PUB_ATOMIC");
    expect(state.messages).toBe(3);
    const last = await jsm.streams.getMessage("PUB_ATOMIC", { seq: 3 });
    expect(last.header.get("Nats-Batch-Commit")).toBe("1");
    expect(decode(last.data)).toBe("c");
  });
});

describe("the JetStream publisher when the connection is lost", () => {
  let bus: TestBus;
  let nc: NatsConnection;

  beforeAll(async () => {
    bus = await startTestBus({ reconnect: true });
    nc = bus.nc;
  });

  afterAll(async () => {
    await bus?.destroy();
  });

  it("fails what waits for an ack at once in fail mode, and lets it wait in wait mode", async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: "PUB_BACK", subjects: ["pub.back.>"] });
    const silent = nc.subscribe("pub.silent.>");
    let received = 0;
    void (async () => {
      for await (const _ of silent) received++;
    })();
    const failing = new JetStreamPublisher(nc, { ackTimeoutMs: 120_000, whenDisconnected: "fail" });
    const waiting = new JetStreamPublisher(nc, { ackTimeoutMs: 1500, whenDisconnected: "wait" });
    const failed = failureOf(failing.publish("pub.silent.fail", encode("in flight")));
    const waited = failureOf(waiting.publish("pub.silent.wait", encode("in flight")));
    await eventually(async () => expect(received).toBe(2));

    const stoppedAt = Date.now();
    await bus.nats.stop();
    const error = await failed;
    expect(error.failure).toBe("unreachable");
    // Long before its 120 s ack timeout.
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(failing.writable).toBe(false);
    const refused = await failureOf(failing.publish("pub.back.1", encode("while down")));
    expect(refused.failure).toBe("unreachable");
    // The other mode leaves it to its ack or its timeout.
    expect((await waited).failure).toBe("timeout");

    await bus.nats.start();
    await eventually(async () => expect(failing.writable).toBe(true), 20_000);
    expect(await failing.publish("pub.back.2", encode("back"))).toMatchObject({ duplicate: false });
    failing.close();
    waiting.close();
  });
});
