import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { buckets, ensureStream, publishEvent, streamDefinitions, subjects } from "@toolmesh/nats";
import {
  type CallbackEvent,
  CallbackEventSchema,
  CallbackService,
  CallStatus,
  type Outcome,
  OutcomeSchema,
  ToolSchema,
  type TraceEvent,
  TraceEventKind,
  TraceEventSchema,
} from "@toolmesh/proto";
import {
  mintJwt,
  type ServiceProcess,
  startNats,
  startService,
  TEST_JS_OPTIONS,
  type TestNats,
} from "@toolmesh/testkit";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_CONSUMER } from "../src/broadcaster.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const TOTAL = 2000;

function token(sub: string, roles: string[]): Promise<string> {
  return mintJwt(JWT_SECRET, { sub, roles });
}
const bearer = async (sub: string, roles: string[]) => ({
  headers: { authorization: `Bearer ${await token(sub, roles)}` },
});

function outcome(
  callId: string,
  status: CallStatus,
  extra: { tool?: string; agentId?: string } = {},
): Outcome {
  return create(OutcomeSchema, {
    callId,
    traceId: randomBytes(16).toString("hex"),
    tool: "data.query",
    agentId: "agent-1",
    userId: "user-1",
    status,
    ...(status === CallStatus.SUCCESS ? { output: { rows: 3, call: callId } } : {}),
    ...(status === CallStatus.FAILURE
      ? { error: { code: "backend_error", message: "the database refused" } }
      : {}),
    ...(status === CallStatus.INTERRUPTED ? { reason: "timeout" } : {}),
    durationMs: 12,
    attempts: 2,
    startedAt: timestampFromMs(Date.now() - 12),
    finishedAt: timestampFromMs(Date.now()),
    source: "dispatcher",
    ...extra,
  });
}

const statuses = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED];

describe("callback service", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let callback: ServiceProcess | undefined;
  let client: Client<typeof CallbackService>;
  let service: { headers: { authorization: string } };
  let agent1: { headers: { authorization: string } };

  const start = async () => {
    callback = await startService("callback", {
      NATS_URL: nats.url,
      TOOLMESH_CALLBACK_PORT: "0",
      TOOLMESH_JWT_SECRET: JWT_SECRET,
    });
    client = createClient(CallbackService, createGrpcTransport({ baseUrl: callback.url }));
  };
  const publish = (o: Outcome, msgId = o.callId) =>
    publishEvent(
      nc.jetstream(TEST_JS_OPTIONS),
      subjects.outcome("dispatcher", o.callId),
      OutcomeSchema,
      o,
      {
        msgId,
      },
    );
  const count = async (stream: string, subject: string) => {
    const info = await jsm.streams.info(stream, { subjects_filter: subject });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  };
  /** Resolves once the service has acked every outcome published so far. */
  const drained = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const stream = await jsm.streams.info("TOOLMESH_OUTCOME");
      const info = await jsm.consumers.info("TOOLMESH_OUTCOME", CALLBACK_CONSUMER);
      if (info.ack_floor.stream_seq >= stream.state.last_seq && info.num_ack_pending === 0) return;
      if (Date.now() > deadline) throw new Error("the callback service did not ack every outcome");
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const callbackEvents = async (subject: string, expected: number): Promise<CallbackEvent[]> => {
    const consumer = await nc
      .jetstream()
      .consumers.get("TOOLMESH_CALLBACK", { filterSubjects: subject });
    const out: CallbackEvent[] = [];
    if (expected === 0) return out;
    const batch = await consumer.fetch({ max_messages: expected, expires: 5000 });
    for await (const msg of batch) {
      out.push(fromBinary(CallbackEventSchema, msg.data));
      if (out.length === expected) break;
    }
    return out;
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    const streams = streamDefinitions();
    for (const s of [streams.outcome, streams.trace, streams.callback]) await ensureStream(jsm, s);
    // Reports come from the tools' backend: a tool-backend key the tools list as reporter.
    service = await bearer("slow-backend", ["tool-backend"]);
    const registry = await nc
      .jetstream(TEST_JS_OPTIONS)
      .views.kv(buckets.registry.name, { history: 1 });
    for (const name of ["report.tool", "data.query"])
      await registry.put(
        buckets.registry.toolKey(name),
        toBinary(
          ToolSchema,
          create(ToolSchema, { spec: { name, reporters: ["slow-backend"] }, revision: 1n }),
        ),
      );
    agent1 = await bearer("agent-1", ["agent"]);
    await start();
  });

  afterAll(async () => {
    await callback?.stop();
    await nc?.close();
    await nats?.destroy();
  });

  it(`broadcasts ${TOTAL} outcomes exactly once across a SIGKILL`, async () => {
    const all: Outcome[] = [];
    for (let i = 0; i < TOTAL; i++) all.push(outcome(`bulk-${i}`, statuses[i % 3] as CallStatus));
    await Promise.all(all.map((o) => publish(o)));
    const deadline = Date.now() + 20_000;
    while ((await count("TOOLMESH_CALLBACK", "toolmesh.callback.>")) < 200) {
      if (Date.now() > deadline) throw new Error("no broadcasts before the kill");
      await new Promise((r) => setTimeout(r, 20));
    }
    await (callback as ServiceProcess).kill();
    // Outcomes keep coming while it is down; none may be lost.
    await Promise.all(all.slice(0, 50).map((o) => publish(o, `${o.callId}-again`)));
    await start();
    await drained();

    expect(await count("TOOLMESH_CALLBACK", "toolmesh.callback.>")).toBe(TOTAL);
    const events = await callbackEvents("toolmesh.callback.>", TOTAL);
    expect(new Set(events.map((e) => e.callId)).size).toBe(TOTAL);
    const traced = await count("TOOLMESH_TRACE", "toolmesh.trace.>");
    expect(traced).toBe(TOTAL);

    const byId = new Map(events.map((e) => [e.callId, e]));
    const ok = byId.get("bulk-0") as CallbackEvent;
    expect(ok).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { rows: 3, call: "bulk-0" },
      agentId: "agent-1",
      userId: "user-1",
      tool: "data.query",
      durationMs: 12,
      attempts: 2,
      traceId: all[0]?.traceId,
    });
    expect(byId.get("bulk-1")).toMatchObject({
      status: CallStatus.FAILURE,
      error: { code: "backend_error" },
    });
    expect(byId.get("bulk-1")?.output).toBeUndefined();
    expect(byId.get("bulk-2")).toMatchObject({ status: CallStatus.INTERRUPTED, reason: "timeout" });
    expect(await count("TOOLMESH_CALLBACK", "toolmesh.callback.success.data-query")).toBe(0);
    expect(await count("TOOLMESH_CALLBACK", "toolmesh.callback.success.data%2Equery")).toBe(667);

    const trace = await nc.jetstream(TEST_JS_OPTIONS).consumers.get("TOOLMESH_TRACE", {
      filterSubjects: subjects.traceEvents(all[1]?.traceId as string),
    });
    // The shard holds other traces' events too; the first of this trace is the broadcast's.
    let event: TraceEvent | undefined;
    while (event?.traceId !== all[1]?.traceId) {
      const msg = await trace.next({ expires: 5000 });
      if (!msg) break;
      event = fromBinary(TraceEventSchema, msg.data);
    }
    expect(event).toMatchObject({
      kind: TraceEventKind.CALLBACK_FAILURE,
      callId: "bulk-1",
      source: "callback",
    });

    const got = await client.getOutcome({ callId: "bulk-2" }, agent1);
    expect(got.event).toMatchObject({ status: CallStatus.INTERRUPTED, reason: "timeout" });
  });

  it("broadcasts a redelivered or republished outcome once", async () => {
    const o = outcome("dup-1", CallStatus.SUCCESS, { tool: "dup.tool" });
    await publish(o, "first");
    await publish(o, "second");
    await publish(o, "third");
    await drained();
    expect(await count("TOOLMESH_CALLBACK", subjects.callback("success", "dup.tool"))).toBe(1);
  });

  it("keeps working across a NATS restart and loses nothing acked", async () => {
    await nats.stop();
    await nats.start();
    const o = outcome("after-restart", CallStatus.SUCCESS, { tool: "restart.tool" });
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        // nats.js's own ack timeout: a publish lost in the reconnect fails soon and is tried again.
        await publishEvent(
          nc.jetstream(),
          subjects.outcome("dispatcher", o.callId),
          OutcomeSchema,
          o,
          {
            msgId: o.callId,
          },
        );
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await drained();
    expect(await count("TOOLMESH_CALLBACK", subjects.callback("success", "restart.tool"))).toBe(1);
    expect(await count("TOOLMESH_CALLBACK", "toolmesh.callback.>")).toBeGreaterThanOrEqual(
      TOTAL + 1,
    );
    expect((await client.getOutcome({ callId: "bulk-0" }, agent1)).event?.status).toBe(
      CallStatus.SUCCESS,
    );
  });

  it("settles an asynchronous call through Report, once", async () => {
    const pending = outcome("async-1", CallStatus.PENDING, { tool: "report.tool" });
    await publish(pending);
    await drained();
    expect((await client.getOutcome({ callId: "async-1" }, agent1)).event?.status).toBe(
      CallStatus.PENDING,
    );

    const watch = (async () => {
      const seen: CallbackEvent[] = [];
      for await (const res of client.watch({ callId: "async-1" }, agent1))
        seen.push(res.event as CallbackEvent);
      return seen;
    })();
    const report = { callId: "async-1", status: CallStatus.SUCCESS, output: { answer: 42 } };
    const first = await client.report(report, service);
    expect(first.duplicate).toBe(false);
    expect(first.event).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { answer: 42 },
      agentId: "agent-1",
    });
    const seen = await watch;
    expect(seen.map((e) => [e.status, e.output])).toEqual([[CallStatus.SUCCESS, { answer: 42 }]]);

    const again = await client.report(report, service);
    expect(again.duplicate).toBe(true);
    await expect(
      client.report(
        { callId: "async-1", status: CallStatus.FAILURE, error: { code: "late", message: "x" } },
        service,
      ),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
      rawMessage: expect.stringContaining('call "async-1" already finished with SUCCESS'),
    });
    await drained();
    expect(await count("TOOLMESH_CALLBACK", subjects.callback("success", "report.tool"))).toBe(1);
    // A finished call's Watch answers at once.
    const done: CallbackEvent[] = [];
    for await (const res of client.watch({ callId: "async-1" }, agent1))
      done.push(res.event as CallbackEvent);
    expect(done).toHaveLength(1);
  });

  it("refuses bad reports with a precise code", async () => {
    await expect(
      client.report({ callId: "no-such-call", status: CallStatus.SUCCESS }, service),
    ).rejects.toMatchObject({
      code: Code.NotFound,
      rawMessage: expect.stringContaining('call "no-such-call" not found'),
    });
    await expect(
      client.report(
        { callId: "bulk-0", status: CallStatus.FAILURE, error: { code: "x" } },
        service,
      ),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(
      client.report({ callId: "bulk-0", status: CallStatus.PENDING }, service),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("status: must be SUCCESS, FAILURE or INTERRUPTED"),
    });
    await expect(
      client.report({ callId: "bulk-0", status: CallStatus.SUCCESS }, agent1),
    ).rejects.toMatchObject({
      code: Code.PermissionDenied,
      rawMessage: expect.stringContaining("Report needs the role tool-backend or admin"),
    });
    await expect(
      client.report({ callId: "bulk-0", status: CallStatus.SUCCESS }),
    ).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });

  it("shows agents only their own calls", async () => {
    const other = await bearer("agent-2", ["agent"]);
    await expect(client.getOutcome({ callId: "bulk-0" }, other)).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
    await expect(client.getOutcome({ callId: "never" }, other)).rejects.toMatchObject({
      code: Code.NotFound,
    });
    const admin = await bearer("root", ["admin"]);
    expect((await client.getOutcome({ callId: "bulk-0" }, admin)).event?.callId).toBe("bulk-0");
    const watchOther = async () => {
      for await (const _ of client.watch({ agentId: "agent-1" }, other)) break;
    };
    await expect(watchOther()).rejects.toMatchObject({ code: Code.PermissionDenied });
    const watchNothing = async () => {
      for await (const _ of client.watch({}, other)) break;
    };
    await expect(watchNothing()).rejects.toMatchObject({ code: Code.InvalidArgument });

    // Watching by tool as agent-2 yields agent-2's calls only.
    const abort = new AbortController();
    const seen = (async () => {
      const out: CallbackEvent[] = [];
      try {
        for await (const res of client.watch(
          { tool: "watched.tool" },
          { ...other, signal: abort.signal },
        )) {
          out.push(res.event as CallbackEvent);
          if (res.event?.agentId === "agent-2") break;
        }
      } catch (error) {
        if (!abort.signal.aborted) throw error;
      }
      return out;
    })();
    // The watch subscribes asynchronously; publish until the first event reaches it.
    for (let i = 0; ; i++) {
      await publish(
        outcome(`w1-${i}`, CallStatus.SUCCESS, { tool: "watched.tool", agentId: "agent-1" }),
      );
      await publish(
        outcome(`w2-${i}`, CallStatus.SUCCESS, { tool: "watched.tool", agentId: "agent-2" }),
      );
      const done = await Promise.race([
        seen.then(() => true),
        new Promise((r) => setTimeout(() => r(false), 200)),
      ]);
      if (done || i > 50) break;
    }
    abort.abort();
    const events = await seen;
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.agentId === "agent-2")).toBe(true);
  });
});
