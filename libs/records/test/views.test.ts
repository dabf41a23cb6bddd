import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  AWAITING_APPROVAL,
  BackendEventSchema,
  CallStatus,
  RecordBatchSchema,
  TraceEventKind,
} from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import {
  callOutcome,
  encodeRecords,
  outcomeOf,
  recordKey,
  recordSlices,
  traceEvents,
} from "../src/index.js";

const call = (
  action: AuditAction,
  fields: MessageInitShape<typeof AuditRecordSchema> = {},
): AuditRecord =>
  create(AuditRecordSchema, {
    action,
    callId: "c1",
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    tool: "data.query",
    agentId: "agent-1",
    time: timestampFromMs(1_000),
    source: "dispatcher",
    ...fields,
  });

describe("record batches", () => {
  it("are the bytes of a RecordBatch, and slice back into the records as sent", () => {
    const records = [call(AuditAction.TOOL_START), call(AuditAction.TOOL_CALL)];
    const bytes = records.map((r) => toBinary(AuditRecordSchema, r));
    const batch = encodeRecords(bytes);
    expect(fromBinary(RecordBatchSchema, batch).records).toEqual(records);
    expect(recordSlices(batch)).toEqual(bytes);
    expect(recordSlices(encodeRecords([]))).toEqual([]);
  });

  it("refuse bytes that are not a batch", () => {
    expect(() => recordSlices(new Uint8Array([0x0a, 0xff, 0xff, 0xff]))).toThrow(/record batch/);
  });
});

describe("a call's records", () => {
  it("are kept once each: a call's own by call and kind, others by their id", () => {
    expect(recordKey(call(AuditAction.TOOL_CALL))).toBe(`c1/${AuditAction.TOOL_CALL}`);
    expect(recordKey(call(AuditAction.TOOL_START))).not.toBe(
      recordKey(call(AuditAction.TOOL_CALL)),
    );
    expect(recordKey(call(AuditAction.ADMIN, { id: "a-1", callId: "" }))).toBe("a-1");
  });

  it("state their outcome: pending while held or accepted, the first final one wins", () => {
    const held = call(AuditAction.APPROVAL_REQUESTED, {
      status: CallStatus.PENDING,
      errorCode: AWAITING_APPROVAL,
      errorMessage: "held until an approver decides",
    });
    expect(outcomeOf(held)).toMatchObject({
      status: CallStatus.PENDING,
      reason: AWAITING_APPROVAL,
      error: { code: AWAITING_APPROVAL, message: "held until an approver decides" },
    });
    expect(outcomeOf(call(AuditAction.TOOL_START))).toBeUndefined();
    const accepted = call(AuditAction.TOOL_CALL, { status: CallStatus.PENDING });
    const reported = call(AuditAction.TOOL_REPORTED, {
      status: CallStatus.SUCCESS,
      output: { rows: 1 },
    });
    const swept = call(AuditAction.TOOL_CALL, {
      status: CallStatus.INTERRUPTED,
      reason: "dispatcher_lost",
    });
    expect(callOutcome([held, accepted])?.status).toBe(CallStatus.PENDING);
    expect(callOutcome([held, accepted, reported])).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { rows: 1 },
    });
    // A second end (a sweeper after the Dispatcher, or the other way round) changes nothing.
    expect(callOutcome([reported, swept])?.status).toBe(CallStatus.SUCCESS);
    expect(callOutcome([call(AuditAction.TOOL_REFUSED)])).toBeUndefined();
  });

  it("derive a trace: the start, the tool's own events, the result and its broadcast, in order", () => {
    const start = call(AuditAction.TOOL_START, { timeoutMs: 500, runtime: "grpc" });
    const end = call(AuditAction.TOOL_CALL, {
      status: CallStatus.FAILURE,
      errorCode: "no_rows",
      durationMs: 7,
      attempts: 2,
      events: [
        create(BackendEventSchema, {
          kind: TraceEventKind.DATA_QUERY,
          payload: { sql: "select 1" },
          time: timestampFromMs(1_001),
        }),
        create(BackendEventSchema, { kind: TraceEventKind.TOOL_ATTEMPT, payload: { attempt: 1 } }),
      ],
    });
    const events = traceEvents([start, end]);
    expect(events.map((e) => [TraceEventKind[e.kind], e.sequence])).toEqual([
      ["TOOL_EXECUTE", 1],
      ["DATA_QUERY", 2],
      ["TOOL_ATTEMPT", 3],
      ["TOOL_RESULT", 4],
      ["CALLBACK_FAILURE", 5],
    ]);
    expect(events[0]?.payload).toEqual({ timeout_ms: 500, runtime: "grpc" });
    expect(events[1]?.time).toEqual(timestampFromMs(1_001));
    expect(events[3]?.payload).toEqual({
      status: "FAILURE",
      duration_ms: 7,
      attempts: 2,
      error_code: "no_rows",
    });
    expect(events[4]).toMatchObject({ source: "callback", payload: { status: "failure" } });
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it("show a refusal as TOOL_REFUSED, and a held call that never ran by its outcome alone", () => {
    expect(
      traceEvents([call(AuditAction.TOOL_REFUSED, { errorCode: "NOT_FOUND", reason: "unknown" })]),
    ).toMatchObject([{ kind: TraceEventKind.TOOL_REFUSED, payload: { code: "NOT_FOUND" } }]);
    const denied = call(AuditAction.TOOL_CALL, {
      status: CallStatus.REFUSED,
      reason: "approval_denied",
    });
    expect(traceEvents([denied]).map((e) => e.kind)).toEqual([TraceEventKind.CALLBACK_REFUSED]);
  });
});
