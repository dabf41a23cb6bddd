import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { buckets, streamNames, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  type CallbackEvent,
  CallbackEventSchema,
  CallbackService,
  CallStatus,
  ToolSchema,
} from "@toolmesh/proto";
import {
  endRecord,
  eventually,
  failure,
  logConsumed,
  metricSum,
  mintJwt,
  type ServiceProcess,
  startAudit,
  startNats,
  startService,
  TEST_JS_OPTIONS,
  type TestNats,
  writeRecords,
} from "@toolmesh/testkit";
import { AckPolicy, connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_DURABLE } from "../src/outcome-feed.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const TOTAL = 2000;
/**
 * Callback's linger here: long enough that blocks written some tens of ms apart always meet in
 * one group, and far above what a lone outcome takes to be stored on a loaded CI machine (about
 * a second), so that it is seen not to wait.
 */
const LINGER_MS = 5000;

const bearer = async (sub: string, roles: string[]) => ({
  headers: { authorization: `Bearer ${await mintJwt(JWT_SECRET, { sub, roles })}` },
});

/** A call's end record with what the checks below look for. */
const ended = (
  callId: string,
  status: CallStatus,
  extra: Partial<Pick<AuditRecord, "tool" | "agentId">> = {},
): AuditRecord =>
  endRecord(callId, status, {
    ...(status === CallStatus.SUCCESS ? { output: { rows: 3, call: callId } } : {}),
    ...(status === CallStatus.FAILURE ? { errorMessage: "the database refused" } : {}),
    attempts: status === CallStatus.PENDING ? 1 : 2,
    ...extra,
  });

const statuses = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED];

// Callback as the stack runs it: records written to the record stream, chained by a real Audit
// into the log, and Callback deriving broadcasts, usage and its RPCs' answers from the log.
describe("callback service", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let audit: ServiceProcess;
  let callback: ServiceProcess | undefined;
  let client: Client<typeof CallbackService>;
  let backend: { headers: { authorization: string } };
  let agent1: { headers: { authorization: string } };
  let admin: { headers: { authorization: string } };

  const start = async () => {
    callback = await startService("callback", {
      NATS_URL: nats.url,
      TOOLMESH_CALLBACK_PORT: "0",
      TOOLMESH_JWT_SECRET: JWT_SECRET,
      TOOLMESH_CALLBACK_LINGER_MS: String(LINGER_MS),
    });
    client = createClient(CallbackService, createGrpcTransport({ baseUrl: callback.url }));
  };
  /** Broadcasts stored on the feed under a subject filter. */
  const count = async (subject: string) => {
    const info = await jsm.streams.info(streamNames.callback, { subjects_filter: subject });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  };
  const drained = () => logConsumed(jsm, CALLBACK_DURABLE);
  const broadcasts = async (subject: string, expected: number): Promise<CallbackEvent[]> => {
    const consumer = await nc
      .jetstream()
      .consumers.get(streamNames.callback, { filterSubjects: subject });
    const out: CallbackEvent[] = [];
    if (expected === 0) return out;
    const batch = await consumer.fetch({ max_messages: expected, expires: 5000 });
    for await (const msg of batch) {
      out.push(fromBinary(CallbackEventSchema, msg.data));
      if (out.length === expected) break;
    }
    return out;
  };
  const usageOf = async (agentId: string, tool: string) => {
    const { usage } = await client.getUsage({ agentId, tool }, admin);
    return {
      calls: usage.reduce((n, u) => n + u.calls, 0n),
      failures: usage.reduce((n, u) => n + u.failures, 0n),
      interrupted: usage.reduce((n, u) => n + u.interrupted, 0n),
    };
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    audit = await startAudit(nats.url, JWT_SECRET);
    // Reports come from the tools' backend: a tool-backend key the tools list as reporter.
    backend = await bearer("slow-backend", ["tool-backend"]);
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
    admin = await bearer("root", ["admin"]);
    // A call that ended before Callback ever ran: in the log, never broadcast.
    await writeRecords(nc, [ended("before-callback", CallStatus.SUCCESS, { tool: "early.tool" })]);
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.auditLog)).state.messages).toBe(1),
      30_000,
      "the first record in the log",
    );
    await start();
    // A subscriber that replays the feed: it keeps every broadcast until read (interest retention).
    await jsm.consumers.add(streamNames.callback, {
      durable_name: "feed-replay",
      ack_policy: AckPolicy.Explicit,
    });
  });

  afterAll(async () => {
    await callback?.stop();
    await audit?.stop();
    await nc?.close();
    await nats?.destroy();
  });

  it(`broadcasts ${TOTAL} outcomes and counts their usage exactly once across a SIGKILL`, async () => {
    const all: AuditRecord[] = [];
    for (let i = 0; i < TOTAL; i++) all.push(ended(`bulk-${i}`, statuses[i % 3] as CallStatus));
    const writes: Promise<unknown>[] = [];
    for (let at = 0; at < TOTAL; at += 20) writes.push(writeRecords(nc, all.slice(at, at + 20)));
    await eventually(
      async () => expect(await count(subjects.callbacks)).toBeGreaterThanOrEqual(200),
      30_000,
      "broadcasts before the kill",
    );
    await (callback as ServiceProcess).kill();
    // Records keep coming while it is down; none may be lost.
    await Promise.all(writes);
    await start();
    await drained();

    expect(await count(subjects.callbacks)).toBe(TOTAL);
    const events = await broadcasts(subjects.callbacks, TOTAL);
    expect(new Set(events.map((e) => e.callId)).size).toBe(TOTAL);
    const byId = new Map(events.map((e) => [e.callId, e]));
    expect(byId.get("bulk-0")).toMatchObject({
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
      error: { code: "backend_error", message: "the database refused" },
    });
    expect(byId.get("bulk-1")?.output).toBeUndefined();
    expect(byId.get("bulk-2")).toMatchObject({ status: CallStatus.INTERRUPTED, reason: "timeout" });
    expect(await count("toolmesh.callback.success.data-query")).toBe(0);
    expect(await count(subjects.callback("success", "data.query"))).toBe(667);
    // The call that ended before Callback first started is in the log, not re-broadcast.
    expect(await count(subjects.callbacksOf("early.tool"))).toBe(0);
    expect((await client.getOutcome({ callId: "before-callback" }, admin)).event?.status).toBe(
      CallStatus.SUCCESS,
    );

    // Usage: each call once, whatever the kill left counted and unacked.
    expect(await usageOf("agent-1", "data.query")).toEqual({
      calls: BigInt(TOTAL),
      failures: 667n,
      interrupted: 666n,
    });

    const got = await client.getOutcome({ callId: "bulk-2" }, agent1);
    expect(got.event).toMatchObject({ status: CallStatus.INTERRUPTED, reason: "timeout" });
  });

  it("stores the broadcasts of a large block in one atomic batch, a small one plainly", async () => {
    const stored = (via: string) =>
      metricSum((callback as ServiceProcess).url, "toolmesh_callback_broadcasts_total", { via });
    const before = { atomic: await stored("atomic"), plain: await stored("plain") };
    // One batch of records is chained into one block: its 100 ends are one group.
    await writeRecords(
      nc,
      Array.from({ length: 100 }, (_, i) =>
        ended(`group-${i}`, CallStatus.SUCCESS, { tool: "group.tool" }),
      ),
    );
    await drained();
    expect(await count(subjects.callbacksOf("group.tool"))).toBe(100);
    expect(await stored("atomic")).toBe(before.atomic + 100);
    await writeRecords(nc, [ended("alone-1", CallStatus.SUCCESS, { tool: "alone.tool" })]);
    await drained();
    expect(await count(subjects.callbacksOf("alone.tool"))).toBe(1);
    expect(await stored("plain")).toBe(before.plain + 1);
  });

  it("lets a group of broadcasts wait for the blocks after it; a lone one goes at once", async () => {
    const url = (callback as ServiceProcess).url;
    const groups = () => metricSum(url, "toolmesh_callback_broadcast_groups_total");
    const atomic = () => metricSum(url, "toolmesh_callback_broadcasts_total", { via: "atomic" });
    const blocks = async () => (await jsm.streams.info(streamNames.auditLog)).state.last_seq;
    const before = { groups: await groups(), atomic: await atomic(), blocks: await blocks() };
    // Four record batches, each chained into a block of its own (Audit lingers 20 ms), all
    // within the Callback's linger: their 80 broadcasts are one group, one atomic batch.
    for (let b = 0; b < 4; b++) {
      await writeRecords(
        nc,
        Array.from({ length: 20 }, (_, i) =>
          ended(`linger-${b}-${i}`, CallStatus.SUCCESS, { tool: "linger.tool" }),
        ),
      );
      const chained = before.blocks + b + 1;
      await eventually(
        async () => expect(await blocks()).toBeGreaterThanOrEqual(chained),
        10_000,
        `block ${b} chained`,
      );
    }
    await drained();
    expect(await blocks()).toBeGreaterThanOrEqual(before.blocks + 4);
    expect(await count(subjects.callbacksOf("linger.tool"))).toBe(80);
    expect(await atomic()).toBe(before.atomic + 80);
    expect(await groups()).toBe(before.groups + 1);
    // A trickle never waits: one outcome alone is stored well within the linger.
    const sent = Date.now();
    await writeRecords(nc, [ended("trickle-1", CallStatus.SUCCESS, { tool: "trickle.tool" })]);
    await drained();
    expect(await count(subjects.callbacksOf("trickle.tool"))).toBe(1);
    expect(Date.now() - sent).toBeLessThan(LINGER_MS);
  });

  it("broadcasts a call's end once however often its record was written", async () => {
    const record = ended("dup-1", CallStatus.SUCCESS, { tool: "dup.tool" });
    for (const msgId of ["first", "second", "third"]) await writeRecords(nc, [record], { msgId });
    await drained();
    expect(await count(subjects.callback("success", "dup.tool"))).toBe(1);
  });

  it("keeps working across a NATS restart and loses nothing acked", async () => {
    await nats.stop();
    await nats.start();
    const record = ended("after-restart", CallStatus.SUCCESS, { tool: "restart.tool" });
    // A publish lost in the reconnect fails within its short ack timeout and is sent again.
    await eventually(
      () => writeRecords(nc, [record], { msgId: "after-restart", timeoutMs: 2000 }),
      30_000,
      "the record written after the restart",
    );
    await drained();
    expect(await count(subjects.callback("success", "restart.tool"))).toBe(1);
    expect((await client.getOutcome({ callId: "bulk-0" }, agent1)).event?.status).toBe(
      CallStatus.SUCCESS,
    );
  });

  it("settles an asynchronous call through Report once; Watch shows PENDING, then the end", async () => {
    await writeRecords(nc, [ended("async-1", CallStatus.PENDING, { tool: "report.tool" })]);
    const pending = await eventually(() => client.getOutcome({ callId: "async-1" }, agent1));
    expect(pending.event?.status).toBe(CallStatus.PENDING);

    const seen: CallbackEvent[] = [];
    const watch = (async () => {
      for await (const res of client.watch({ callId: "async-1" }, agent1))
        seen.push(res.event as CallbackEvent);
    })();
    await eventually(async () => expect(seen.map((e) => e.status)).toEqual([CallStatus.PENDING]));
    const report = { callId: "async-1", status: CallStatus.SUCCESS, output: { answer: 42 } };
    const first = await client.report(report, backend);
    expect(first.duplicate).toBe(false);
    expect(first.event).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { answer: 42 },
      agentId: "agent-1",
    });
    await watch;
    expect(seen.map((e) => [e.status, e.output])).toEqual([
      [CallStatus.PENDING, undefined],
      [CallStatus.SUCCESS, { answer: 42 }],
    ]);
    expect((await client.getOutcome({ callId: "async-1" }, agent1)).event?.output).toEqual({
      answer: 42,
    });

    const again = await client.report(report, backend);
    expect(again.duplicate).toBe(true);
    const late = await failure(
      client.report(
        { callId: "async-1", status: CallStatus.FAILURE, error: { code: "late", message: "x" } },
        backend,
      ),
    );
    expect(late.code).toBe(Code.FailedPrecondition);
    expect(late.rawMessage).toContain('call "async-1" already finished with SUCCESS');
    await drained();
    expect(await count(subjects.callback("success", "report.tool"))).toBe(1);
    expect(await count(subjects.callback("pending", "report.tool"))).toBe(1);
    // A finished call's Watch answers at once with its end.
    const done: CallbackEvent[] = [];
    for await (const res of client.watch({ callId: "async-1" }, agent1))
      done.push(res.event as CallbackEvent);
    expect(done.map((e) => e.status)).toEqual([CallStatus.SUCCESS]);
  });

  it("stores one of two racing reports; the other learns which", async () => {
    await writeRecords(nc, [ended("async-race", CallStatus.PENDING, { tool: "report.tool" })]);
    await eventually(() => client.getOutcome({ callId: "async-race" }, agent1));
    const answers = await Promise.allSettled([
      client.report({ callId: "async-race", status: CallStatus.SUCCESS, output: {} }, backend),
      client.report(
        { callId: "async-race", status: CallStatus.INTERRUPTED, reason: "gave_up" },
        backend,
      ),
    ]);
    const won = answers.flatMap((a) => (a.status === "fulfilled" ? [a.value] : []));
    const lost = answers.flatMap((a) => (a.status === "rejected" ? [a.reason] : []));
    expect(won).toHaveLength(1);
    expect(won[0]?.duplicate).toBe(false);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ code: Code.FailedPrecondition });
    const outcome = await client.getOutcome({ callId: "async-race" }, agent1);
    expect(outcome.event?.status).toBe(won[0]?.event?.status);
  });

  it("refuses bad reports with a precise code", async () => {
    await writeRecords(nc, [
      create(AuditRecordSchema, {
        ...ended("held-1", CallStatus.PENDING, { tool: "report.tool" }),
        action: AuditAction.APPROVAL_REQUESTED,
        errorCode: "awaiting_approval",
      }),
      create(AuditRecordSchema, {
        ...ended("running-1", CallStatus.UNSPECIFIED, { tool: "report.tool" }),
        action: AuditAction.TOOL_START,
        deadline: timestampFromMs(Date.now() + 3_600_000),
      }),
    ]);
    const nothing = await failure(
      client.report({ callId: "no-such-call", status: CallStatus.SUCCESS }, backend),
    );
    expect(nothing.code).toBe(Code.NotFound);
    expect(nothing.rawMessage).toContain('call "no-such-call" not found');
    const held = await failure(
      client.report({ callId: "held-1", status: CallStatus.SUCCESS }, backend),
    );
    expect(held.code).toBe(Code.FailedPrecondition);
    expect(held.rawMessage).toContain("held for approval");
    const running = await failure(
      client.report({ callId: "running-1", status: CallStatus.SUCCESS }, backend),
    );
    expect(running.code).toBe(Code.FailedPrecondition);
    expect(running.rawMessage).toContain("it is running");
    const changed = await failure(
      client.report(
        { callId: "bulk-0", status: CallStatus.FAILURE, error: { code: "x" } },
        backend,
      ),
    );
    expect(changed.code).toBe(Code.FailedPrecondition);
    const notFinal = await failure(
      client.report({ callId: "bulk-0", status: CallStatus.PENDING }, backend),
    );
    expect(notFinal.code).toBe(Code.InvalidArgument);
    expect(notFinal.rawMessage).toContain("status: must be SUCCESS, FAILURE or INTERRUPTED");
    const notBackend = await failure(
      client.report({ callId: "bulk-0", status: CallStatus.SUCCESS }, agent1),
    );
    expect(notBackend.code).toBe(Code.PermissionDenied);
    expect(notBackend.rawMessage).toContain("Report needs the role tool-backend or admin");
    const anonymous = await failure(
      client.report({ callId: "bulk-0", status: CallStatus.SUCCESS }),
    );
    expect(anonymous.code).toBe(Code.Unauthenticated);
  });

  it("says why a call has no outcome: never made or expired, refused, or still running", async () => {
    await writeRecords(nc, [
      create(AuditRecordSchema, {
        ...ended("refused-1", CallStatus.REFUSED),
        action: AuditAction.TOOL_REFUSED,
        errorCode: "PERMISSION_DENIED",
        errorMessage: "no grant",
      }),
    ]);
    const never = await failure(client.getOutcome({ callId: "never" }, agent1));
    expect(never.code).toBe(Code.NotFound);
    expect(never.rawMessage).toContain("no record of it is kept");
    const refused = await eventually(async () => {
      const error = await failure(client.getOutcome({ callId: "refused-1" }, agent1));
      expect(error.rawMessage).toContain("refused before it ran (PERMISSION_DENIED: no grant)");
      return error;
    });
    expect(refused.code).toBe(Code.NotFound);
    const running = await failure(client.getOutcome({ callId: "running-1" }, admin));
    expect(running.code).toBe(Code.NotFound);
    expect(running.rawMessage).toContain("it is running");
  });

  it("shows agents only their own calls", async () => {
    const other = await bearer("agent-2", ["agent"]);
    const theirs = await failure(client.getOutcome({ callId: "bulk-0" }, other));
    expect(theirs.code).toBe(Code.PermissionDenied);
    expect((await client.getOutcome({ callId: "bulk-0" }, admin)).event?.callId).toBe("bulk-0");
    const watchTheirs = async () => {
      for await (const _ of client.watch({ callId: "bulk-0" }, other)) break;
    };
    await expect(watchTheirs()).rejects.toMatchObject({ code: Code.PermissionDenied });
    const watchOther = async () => {
      for await (const _ of client.watch({ agentId: "agent-1" }, other)) break;
    };
    await expect(watchOther()).rejects.toMatchObject({ code: Code.PermissionDenied });
    const watchNothing = async () => {
      for await (const _ of client.watch({}, other)) break;
    };
    await expect(watchNothing()).rejects.toMatchObject({ code: Code.InvalidArgument });

    // Watching by tool as agent-2 yields agent-2's finished calls only, never a PENDING one.
    const abort = new AbortController();
    const seen = (async () => {
      const out: CallbackEvent[] = [];
      try {
        for await (const res of client.watch(
          { tool: "watched.tool" },
          { ...other, signal: abort.signal },
        )) {
          out.push(res.event as CallbackEvent);
          if (res.event?.agentId === "agent-2" && res.event.status === CallStatus.SUCCESS) break;
        }
      } catch (error) {
        if (!abort.signal.aborted) throw error;
      }
      return out;
    })();
    // The watch subscribes asynchronously; write until the first event reaches it.
    for (let i = 0; ; i++) {
      await writeRecords(nc, [
        ended(`w1-${i}`, CallStatus.SUCCESS, { tool: "watched.tool", agentId: "agent-1" }),
        ended(`w2p-${i}`, CallStatus.PENDING, { tool: "watched.tool", agentId: "agent-2" }),
        ended(`w2-${i}`, CallStatus.SUCCESS, { tool: "watched.tool", agentId: "agent-2" }),
      ]);
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
    expect(events.every((e) => e.status === CallStatus.SUCCESS)).toBe(true);
  });
});
