import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { idShard, publishEvent, subjects } from "@toolmesh/nats";
import { TraceEventKind, TraceEventSchema } from "@toolmesh/proto";
import { TEST_JS_OPTIONS } from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TraceReader } from "../src/trace-reader.js";
import { type AuditBus, startAuditBus } from "./fixtures.js";

const newTraceId = () => randomBytes(16).toString("hex");

/** Another trace id filed under the same shard as `traceId`. */
function shardMate(traceId: string): string {
  for (;;) {
    const id = newTraceId();
    if (id !== traceId && idShard(id) === idShard(traceId)) return id;
  }
}

describe("reading a trace from its shard", () => {
  let bus: AuditBus;
  let jsm: JetStreamManager;
  const trace = newTraceId();
  const mate = shardMate(trace);
  let firstMs = 0;
  let lastMs = 0;
  let afterMs = 0;

  beforeAll(async () => {
    bus = await startAuditBus();
    jsm = await bus.nc.jetstreamManager();
    const js = bus.nc.jetstream(TEST_JS_OPTIONS);
    const publish = (traceId: string, id: string) =>
      publishEvent(
        js,
        subjects.trace("dispatcher", traceId),
        TraceEventSchema,
        create(TraceEventSchema, { id, traceId, kind: TraceEventKind.TOOL_EXECUTE }),
      );
    firstMs = Date.now();
    for (let i = 0; i < 5; i++) {
      await publish(trace, `t${i}`);
      await publish(mate, `m${i}`);
    }
    lastMs = Date.now();
    // Published after the trace's span: a read bounded by the span never reaches it.
    await new Promise((r) => setTimeout(r, 50));
    afterMs = Date.now();
    await publish(trace, "late");
  });
  afterAll(async () => {
    await bus?.destroy();
  });

  const reader = (options: ConstructorParameters<typeof TraceReader>[1]) =>
    new TraceReader(bus.nc, options);

  it("keeps the trace's own events, in order, from the span the index gives", async () => {
    const events = await reader({
      span: () => ({ startMs: firstMs, endMs: lastMs }),
      leadMs: 5,
      tailMs: 0,
    }).events(trace);
    expect(events.map((e) => e.id)).toEqual(["t0", "t1", "t2", "t3", "t4"]);
  });

  it("stops at the end of the span instead of reading the rest of the stream", async () => {
    const all = await reader({
      span: () => ({ startMs: firstMs, endMs: afterMs + 60_000 }),
      leadMs: 5,
    }).events(trace);
    expect(all.map((e) => e.id)).toEqual(["t0", "t1", "t2", "t3", "t4", "late"]);
    const late = await reader({
      span: () => ({ startMs: afterMs, endMs: afterMs + 60_000 }),
      leadMs: 0,
    }).events(trace);
    expect(late.map((e) => e.id)).toEqual(["late"]);
  });

  it("looks among recent events for a trace the index does not know, and no further", async () => {
    const recent = await reader({ span: () => undefined }).events(mate);
    expect(recent.map((e) => e.id)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    const none = await reader({ span: () => undefined, recentMs: Date.now() - afterMs }).events(
      mate,
    );
    expect(none).toEqual([]);
  });

  it("answers a trace with no events at once, and leaves no consumer behind", async () => {
    const events = await reader({ span: () => undefined }).events(newTraceId());
    expect(events).toEqual([]);
    const consumers = await jsm.consumers.list("TOOLMESH_TRACE").next();
    expect(consumers).toEqual([]);
  });
});
