import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { newCallId } from "@toolmesh/names";
import { subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  AWAITING_APPROVAL,
  CallbackEventSchema,
  CallStatus,
  RecordBatchSchema,
  statusWord,
} from "@toolmesh/proto";
import { encodeRecords } from "@toolmesh/records";
import { startStack, type TestStack } from "@toolmesh/testkit";
import { headers } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditOutcomes } from "../src/records/outcome-lookup.js";

// A call's outcomes as its records in the audit log state them, asked of a real Audit over the
// bus; records are written to the record stream as the Dispatcher writes them.
describe("a call's outcomes, from its records", () => {
  let stack: TestStack;
  let lookup: AuditOutcomes;

  const write = async (
    callId: string,
    action: AuditAction,
    status: CallStatus,
    extra: { reason?: string; errorCode?: string } = {},
  ) => {
    const record = create(AuditRecordSchema, {
      time: timestampNow(),
      action,
      tool: "lookup.tool",
      agentId: "agent-1",
      callId,
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      status,
      ...extra,
    });
    const h = headers();
    h.set(TYPE_HEADER, RecordBatchSchema.typeName);
    await stack.nc
      .jetstream()
      .publish(
        subjects.records("dispatcher"),
        encodeRecords([toBinary(AuditRecordSchema, record)]),
        { headers: h },
      );
  };

  beforeAll(async () => {
    stack = await startStack({ services: ["permission", "audit"] });
    lookup = new AuditOutcomes(stack.nc, 0);
  });
  afterAll(() => stack?.stop());

  it("gives the first and the latest outcome; a held call has none until it runs", async () => {
    const callId = newCallId();
    await write(callId, AuditAction.APPROVAL_REQUESTED, CallStatus.PENDING, {
      errorCode: AWAITING_APPROVAL,
    });
    expect(await lookup.hasOutcome(callId)).toBe(false);
    await write(callId, AuditAction.TOOL_START, CallStatus.UNSPECIFIED);
    await write(callId, AuditAction.TOOL_CALL, CallStatus.PENDING);
    expect(await lookup.hasOutcome(callId)).toBe(true);
    await write(callId, AuditAction.TOOL_REPORTED, CallStatus.FAILURE, { errorCode: "broken" });
    const found = await lookup.read(callId);
    expect(found?.first).toMatchObject({
      callId,
      status: CallStatus.PENDING,
      reason: AWAITING_APPROVAL,
    });
    expect(found?.last).toMatchObject({ callId, status: CallStatus.FAILURE });
    expect(found?.createdMs).toBeLessThanOrEqual(found?.updatedMs ?? 0);
  });

  it("finds a call just written (the lookup waits for records on their way) and knows no other", async () => {
    const callId = newCallId();
    await write(callId, AuditAction.TOOL_CALL, CallStatus.SUCCESS);
    expect((await lookup.read(callId))?.last.status).toBe(CallStatus.SUCCESS);
    expect(await lookup.read(newCallId())).toBeUndefined();
    expect(await lookup.hasOutcome("chosen-by-caller")).toBe(false);
  });

  it("wakes a waiter when the call's final outcome is broadcast, not before", async () => {
    const callId = newCallId();
    await write(callId, AuditAction.TOOL_CALL, CallStatus.PENDING);
    let ended = false;
    const waiting = lookup
      .waitForEnd(callId, "lookup.tool", AbortSignal.timeout(20_000))
      .then(() => {
        ended = true;
      });
    // The call is PENDING: the waiter waits.
    expect(ended).toBe(false);
    await write(callId, AuditAction.TOOL_REPORTED, CallStatus.SUCCESS);
    // Callback broadcasts a final outcome once it is in the log; here the test plays Callback.
    const event = create(CallbackEventSchema, {
      callId,
      tool: "lookup.tool",
      status: CallStatus.SUCCESS,
    });
    stack.nc.publish(
      subjects.callback(statusWord(CallStatus.SUCCESS), "lookup.tool"),
      toBinary(CallbackEventSchema, event),
    );
    await waiting;
    expect(ended).toBe(true);
  });

  it("answers an aborted wait at once", async () => {
    const gone = new AbortController();
    gone.abort();
    await lookup.waitForEnd(newCallId(), "lookup.tool", gone.signal);
  });
});
