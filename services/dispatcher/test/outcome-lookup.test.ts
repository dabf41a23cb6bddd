import { create } from "@bufbuild/protobuf";
import { newCallId } from "@toolmesh/names";
import { ensureStream, idShard, publishEvent, streamDefinitions, subjects } from "@toolmesh/nats";
import { AWAITING_APPROVAL, CallStatus, OutcomeSchema } from "@toolmesh/proto";
import { startNats, TEST_JS_OPTIONS, type TestNats } from "@toolmesh/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamOutcomeLookup } from "../src/records/outcome-lookup.js";

describe("a call's outcomes, read from its shard", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let lookup: StreamOutcomeLookup;

  const publish = (
    source: "dispatcher" | "callback",
    callId: string,
    status: CallStatus,
    reason = "",
  ) =>
    publishEvent(
      nc.jetstream(TEST_JS_OPTIONS),
      subjects.outcome(source, callId),
      OutcomeSchema,
      create(OutcomeSchema, { callId, status, reason, agentId: "agent-1" }),
    );

  /** A call id made now whose shard is `callId`'s. */
  const shardMate = (callId: string) => {
    for (;;) {
      const id = newCallId();
      if (id !== callId && idShard(id) === idShard(callId)) return id;
    }
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    const jsm = await nc.jetstreamManager();
    await ensureStream(jsm, streamDefinitions().outcome);
    lookup = new StreamOutcomeLookup(nc, nc.jetstream(TEST_JS_OPTIONS), 0);
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.destroy();
  });

  it("gives the first and the latest outcome, a Report's over the Dispatcher's", async () => {
    const callId = newCallId();
    const mate = shardMate(callId);
    await publish("dispatcher", callId, CallStatus.PENDING, AWAITING_APPROVAL);
    await publish("dispatcher", mate, CallStatus.SUCCESS);
    expect(await lookup.hasOutcome(callId, Date.now() - 1000)).toBe(false);
    await publish("dispatcher", callId, CallStatus.PENDING);
    expect(await lookup.hasOutcome(callId, Date.now() - 1000)).toBe(true);
    await publish("callback", callId, CallStatus.FAILURE);
    const found = await lookup.read(callId);
    expect(found?.first).toMatchObject({
      callId,
      status: CallStatus.PENDING,
      reason: AWAITING_APPROVAL,
    });
    expect(found?.last).toMatchObject({ callId, status: CallStatus.FAILURE });
    expect((await lookup.read(mate))?.last.status).toBe(CallStatus.SUCCESS);
  });

  it("looks only from the call's start on, and knows no id a caller chose", async () => {
    const callId = newCallId();
    await publish("dispatcher", callId, CallStatus.SUCCESS);
    expect(await lookup.hasOutcome(callId, Date.now() + 60_000)).toBe(false);
    const later = new StreamOutcomeLookup(nc, nc.jetstream(TEST_JS_OPTIONS), 0, -60_000);
    expect(await later.read(callId)).toBeUndefined();
    await publish("dispatcher", "chosen-by-caller", CallStatus.SUCCESS);
    expect(await lookup.read("chosen-by-caller")).toBeUndefined();
    expect(await lookup.hasOutcome("chosen-by-caller", Date.now() - 1000)).toBe(true);
  });

  it("wakes a waiter when the call ends, not before", async () => {
    const callId = newCallId();
    await publish("dispatcher", callId, CallStatus.PENDING, AWAITING_APPROVAL);
    let ended = false;
    const waiting = lookup.waitForEnd(callId, AbortSignal.timeout(20_000)).then(() => {
      ended = true;
    });
    await publish("dispatcher", shardMate(callId), CallStatus.SUCCESS);
    await publish("dispatcher", callId, CallStatus.PENDING);
    expect(ended).toBe(false);
    await publish("callback", callId, CallStatus.SUCCESS);
    await waiting;
    expect(ended).toBe(true);
    expect((await lookup.read(callId))?.last.status).toBe(CallStatus.SUCCESS);
  });
});
