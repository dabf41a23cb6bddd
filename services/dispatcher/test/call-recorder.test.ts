import { create, type DescField, fromBinary, ScalarType, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { RecordWriteError } from "@toolmesh/nats";
import { AuditAction, type AuditRecord, AuditRecordSchema, CallStatus } from "@toolmesh/proto";
import { Collector, failure } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { CallRecorder, type RecordSink } from "../src/records/call-recorder.js";
import { type CallRecordFields, encodeCallRecord } from "../src/records/record-encoding.js";

/** A record sink whose writes are stored (or fail) only when the test says so. */
class GatedSink implements RecordSink {
  readonly writable = true;
  readonly full = undefined;
  /** Every record written, in order, stored or not: a test awaits the nth. */
  readonly writes = new Collector<AuditRecord>();
  readonly stored: AuditRecord[] = [];
  private readonly open: { settle: (error?: Error) => void; record: AuditRecord }[] = [];

  constructor(readonly maxPayload = 1024 * 1024) {}

  write(bytes: Uint8Array): Promise<void> {
    const record = fromBinary(AuditRecordSchema, bytes);
    this.writes.push(record);
    return new Promise((resolve, reject) => {
      this.open.push({
        record,
        settle: (error) => {
          if (error) return reject(error);
          this.stored.push(record);
          resolve();
        },
      });
    });
  }

  get written(): AuditRecord[] {
    return this.writes.items;
  }

  /** Resolves once `count` records were written. */
  async wrote(count: number): Promise<void> {
    await this.writes.waitFor(() => true, count);
  }

  /** Stores (or fails) the oldest write not yet settled. */
  settle(error?: Error): void {
    const next = this.open.shift();
    if (!next) throw new Error("no write is waiting");
    next.settle(error);
  }
}

const call = {
  traceId: "t1",
  callId: "c1",
  parentId: "",
  tool: "test.read",
  principal: { agentId: "agent-1", userId: "", roles: [], keyId: "" } as never,
};
const run = (startedMs: number) => ({
  args: { q: "x", password: "hunter2" },
  timeoutMs: 5000,
  runtime: "grpc",
  startedMs,
  deadlineMs: startedMs + 5000,
});
const ended = (startedMs: number, output: Record<string, string> = { ok: "yes" }) =>
  [
    { status: CallStatus.SUCCESS, reason: "", output },
    { args: {}, attempts: 1, startedMs, finishedMs: startedMs + 3 },
  ] as const;
const kinds = (records: AuditRecord[]) => records.map((r) => AuditAction[r.action]);

// The records one call writes (CallRecorder): a read-only call's start waits for its end and is
// written with it as one record when the end comes within the linger; otherwise, and for a tool
// with side effects, the start is written alone and the end follows its ack.
describe("a call's start and end records", () => {
  it("writes a read-only call that ends within the linger as one record, start fields and all", async () => {
    const sink = new GatedSink();
    const record = new CallRecorder(sink, [], "instance-1", 10_000).begin(call);
    const started = record.start(run(1000), { linger: true });
    expect(sink.written).toHaveLength(0);
    const stored = record.finished(...ended(1000));
    expect(kinds(sink.written)).toEqual(["TOOL_CALL"]);
    expect(sink.written[0]).toMatchObject({
      instance: "instance-1",
      arguments: { q: "x", password: "[redacted]" },
      timeoutMs: 5000,
      runtime: "grpc",
      status: CallStatus.SUCCESS,
      output: { ok: "yes" },
      durationMs: 3,
    });
    sink.settle();
    await Promise.all([started, stored]);
    expect(sink.stored).toHaveLength(1);
  });

  it("writes the start alone once the linger is over, and the end only after its ack", async () => {
    const sink = new GatedSink();
    const record = new CallRecorder(sink, [], "instance-1", 5).begin(call);
    const started = record.start(run(1000), { linger: true });
    await sink.wrote(1);
    expect(kinds(sink.written)).toEqual(["TOOL_START"]);
    const stored = record.finished(...ended(1000));
    // Not before the start is acked (every promise settled by then has run): an end without its
    // start is never stored.
    await new Promise((resolve) => setImmediate(resolve));
    expect(kinds(sink.written)).toEqual(["TOOL_START"]);
    sink.settle();
    await started;
    await sink.wrote(2);
    expect(kinds(sink.written)).toEqual(["TOOL_START", "TOOL_CALL"]);
    expect(sink.written[1]?.instance).toBe("");
    sink.settle();
    await stored;
  });

  it("never writes the end of a call whose start failed, and says why", async () => {
    const sink = new GatedSink();
    const record = new CallRecorder(sink, [], "instance-1", 10_000).begin(call);
    const started = record.start(run(1000), { linger: false });
    expect(kinds(sink.written)).toEqual(["TOOL_START"]);
    const stored = record.finished(...ended(1000));
    sink.settle(new Error("the record stream is full"));
    expect((await failure(started)).message).toContain("the record stream is full");
    expect((await failure(stored)).message).toContain("the record stream is full");
    expect(kinds(sink.written)).toEqual(["TOOL_START"]);
  });

  it("fails a held start and its end together when their one record is refused", async () => {
    const sink = new GatedSink();
    const record = new CallRecorder(sink, [], "instance-1", 10_000).begin(call);
    const started = record.start(run(1000), { linger: true });
    const stored = record.finished(...ended(1000));
    sink.settle(new Error("no room"));
    expect((await failure(started)).rawMessage).toBe("no room");
    expect((await failure(stored)).rawMessage).toBe("no room");
  });

  it("writes start and end apart when together they would not fit a bus message", async () => {
    const sink = new GatedSink(40 * 1024);
    const record = new CallRecorder(sink, [], "instance-1", 10_000).begin(call);
    const big = { q: "a".repeat(20 * 1024) };
    const started = record.start({ ...run(1000), args: big }, { linger: true });
    const stored = record.finished(...ended(1000, { rows: "b".repeat(20 * 1024) }));
    expect(kinds(sink.written)).toEqual(["TOOL_START"]);
    sink.settle();
    await started;
    await sink.wrote(2);
    expect(kinds(sink.written)).toEqual(["TOOL_START", "TOOL_CALL"]);
    sink.settle();
    await stored;
  });

  it("knows whether a record of the call may be stored once its end failed", async () => {
    const cases = [
      // Written with its end: that one write was the call's only record.
      { linger: true, error: undefined, may: false },
      // Alone and stored; alone and maybe stored (its ack lost): the sweeper closes the call.
      { linger: false, error: undefined, may: true },
      { linger: false, error: new RecordWriteError("unknown", "no ack"), may: true },
      // Alone and refused: nothing of the call is stored.
      { linger: false, error: new RecordWriteError("full", "no room"), may: false },
    ];
    for (const { linger, error, may } of cases) {
      const sink = new GatedSink();
      const record = new CallRecorder(sink, [], "instance-1", 10_000).begin(call);
      const started = record.start(run(1000), { linger });
      const stored = record.finished(...ended(1000));
      sink.settle(error);
      if (!linger && !error) {
        // Its start stored, the end is written, and is stored too.
        await sink.wrote(2);
        sink.settle();
      }
      await Promise.allSettled([started, stored]);
      expect(record.startMayBeStored, JSON.stringify({ linger, error: error?.failure })).toBe(may);
    }
  });

  it("writes the start at once for a tool with side effects, or with no linger", async () => {
    for (const [lingerMs, linger] of [
      [10_000, false],
      [0, true],
    ] as const) {
      const sink = new GatedSink();
      const record = new CallRecorder(sink, [], "instance-1", lingerMs).begin(call);
      const started = record.start(run(1000), { linger });
      expect(kinds(sink.written)).toEqual(["TOOL_START"]);
      sink.settle();
      await started;
    }
  });
});

/** A value of a field that is not its zero: what a record of any kind might carry in it. */
function sample(field: DescField, n: number): unknown {
  const one = (): unknown => {
    if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum"))
      return field.enum.values[1]?.number ?? 1;
    const message = field.fieldKind === "message" ? field.message : undefined;
    if (message?.typeName === "google.protobuf.Struct")
      return { q: `v${n}`, n, nested: { list: [1, "a", null, true], é: "中😀" } };
    if (message?.typeName === "google.protobuf.Timestamp")
      return timestampFromMs(1_790_000_000_000 + n);
    if (message) return create(message);
    if (field.fieldKind === "list" && field.listKind === "message") return create(field.message);
    const scalar =
      field.fieldKind === "scalar" || field.fieldKind === "list" ? field.scalar : undefined;
    switch (scalar) {
      case ScalarType.STRING:
        return `${field.localName}-${n}`;
      case ScalarType.BOOL:
        return true;
      case ScalarType.BYTES:
        return new Uint8Array([n, 1]);
      case ScalarType.INT64:
      case ScalarType.UINT64:
      case ScalarType.SINT64:
      case ScalarType.FIXED64:
      case ScalarType.SFIXED64:
        return BigInt(n) * 1_000_000_007n;
      default:
        return n + 0.5 * Number(scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT);
    }
  };
  return field.fieldKind === "list" ? [one(), one()] : one();
}

describe("a record's bytes", () => {
  const identity = {
    ...call,
    parentId: "parent-1",
    principal: {
      agentId: "agent-1",
      userId: "user-1",
      roles: ["agent", "ops"],
      keyId: "k",
    } as never,
  };
  const ofCall = new Set(["callId", "traceId", "parentId", "tool", "agentId", "userId", "roles"]);

  it("are what create() and toBinary give, every field set or left undefined", () => {
    const all: Record<string, unknown> = {};
    AuditRecordSchema.fields.forEach((field, i) => {
      if (!ofCall.has(field.localName)) all[field.localName] = sample(field, i + 1);
    });
    const some = {
      ...all,
      reason: undefined,
      errorDetails: undefined,
      cost: undefined,
      source: undefined,
    };
    for (const fields of [
      all,
      some,
      { action: AuditAction.TOOL_START, time: timestampFromMs(5) },
    ]) {
      const expected = toBinary(
        AuditRecordSchema,
        create(AuditRecordSchema, {
          source: "dispatcher",
          ...(fields as object),
          tool: identity.tool,
          agentId: "agent-1",
          userId: "user-1",
          roles: ["agent", "ops"],
          callId: identity.callId,
          traceId: identity.traceId,
          parentId: identity.parentId,
        }),
      );
      expect(encodeCallRecord(identity, fields as CallRecordFields)).toEqual(expected);
    }
    expect(Object.keys(all).length).toBe(AuditRecordSchema.fields.length - ofCall.size);
  });
});
