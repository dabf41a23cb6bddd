import { Code } from "@toolmesh/errors";
import { CallStatus, RuntimeState, TraceEventKind } from "@toolmesh/proto";
import { eventually } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startDispatchFixture } from "./dispatch-fixture.js";

// What happens once a tool runs, through the whole chain (dispatch-fixture.ts): deadlines,
// cancel, retries, idempotency, batches, failing backends, remote and local runtimes.
describe("dispatch end to end", () => {
  const e2e = startedForFile(startDispatchFixture);

  it("interrupts a call that runs past its deadline and aborts the backend", async () => {
    const res = await e2e.call("test.slow", { ms: 5000 }, { timeoutMs: 200 });
    expect(res.status).toBe(CallStatus.INTERRUPTED);
    expect(res.error?.code).toBe("timeout");
    await e2e.log.aborted.waitFor((id) => id === res.callId);
    const [outcome] = await e2e.outcomes.waitFor((o) => o.callId === res.callId);
    expect(outcome?.reason).toBe("timeout");
  });

  it("Cancel interrupts a running call; another agent may not cancel it", async () => {
    const callId = `cancel-${Date.now()}`;
    const running = e2e.call("test.slow", { ms: 10_000 }, { context: { callId } });
    await e2e.log.started.waitFor((id) => id === callId);
    await expect(e2e.call("test.slow", {}, { context: { callId } })).rejects.toMatchObject({
      code: Code.AlreadyExists,
      rawMessage: expect.stringContaining("already running"),
    });
    await expect(
      e2e.dispatcher().cancel({ callId }, e2e.stack.as(e2e.stranger)),
    ).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
    await e2e.dispatcher().cancel({ callId }, e2e.stack.as(e2e.agent));
    const res = await running;
    expect(res.status).toBe(CallStatus.INTERRUPTED);
    expect(res.error?.code).toBe("cancelled");
    await expect(
      e2e.dispatcher().cancel({ callId }, e2e.stack.as(e2e.agent)),
    ).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("retries an idempotent tool on 503 and traces every attempt", async () => {
    const res = await e2e.call("test.flaky");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.attempts).toBe(3);
    expect(e2e.remoteHits.get("/flaky")).toBe(3);
    const attempts = await e2e.traces.waitFor(
      (e) => e.callId === res.callId && e.kind === TraceEventKind.TOOL_ATTEMPT,
      3,
    );
    expect(attempts.map((e) => e.payload?.ok)).toEqual([false, false, true]);
  });

  it("does not retry a tool that is not idempotent", async () => {
    const before = e2e.remoteHits.get("/always503") ?? 0;
    const res = await e2e.call("test.flaky-once");
    expect(res.status).toBe(CallStatus.FAILURE);
    expect(res.error?.code).toBe("backend_unavailable");
    expect(res.attempts).toBe(1);
    expect(e2e.remoteHits.get("/always503")).toBe(before + 1);
  });

  it("replays the first outcome for a repeated idempotency key without running the tool", async () => {
    const key = `idem-${Date.now()}`;
    const first = await e2e.call(
      "test.counter",
      { label: "once" },
      { context: { idempotencyKey: key } },
    );
    const second = await e2e.call(
      "test.counter",
      { label: "once" },
      { context: { idempotencyKey: key } },
    );
    expect(first.replayed).toBe(false);
    expect(second.replayed).toBe(true);
    expect(second.callId).toBe(first.callId);
    expect(second.output).toEqual(first.output);
    expect(e2e.log.sideEffects.filter((l) => l === "once end")).toHaveLength(1);
  });

  it("runs a batch: results in order, refusals as results, side effects one at a time in order", async () => {
    const res = await e2e.dispatcher().dispatchBatch(
      {
        calls: [
          { tool: "test.counter", arguments: { label: "b1", ms: 100 } },
          { tool: "test.echo", arguments: { text: "a" } },
          { tool: "missing.tool" },
          { tool: "test.slow", arguments: { ms: 5000 }, timeoutMs: 100 },
          { tool: "test.counter", arguments: { label: "b2" } },
          { tool: "test.echo", arguments: { text: "" } },
        ],
      },
      e2e.stack.as(e2e.agent),
    );
    expect(res.results.map((r) => r.status)).toEqual([
      CallStatus.SUCCESS,
      CallStatus.SUCCESS,
      CallStatus.REFUSED,
      CallStatus.INTERRUPTED,
      CallStatus.SUCCESS,
      CallStatus.REFUSED,
    ]);
    expect(res.results[2]?.refusalCode).toBe("NOT_FOUND");
    expect(res.results[5]?.refusalCode).toBe("INVALID_ARGUMENT");
    expect(res.results[5]?.error?.message).toContain("/text");
    expect(new Set(res.results.map((r) => r.traceId))).toEqual(new Set([res.traceId]));
    expect(e2e.log.sideEffects.filter((l) => l.startsWith("b"))).toEqual([
      "b1 start",
      "b1 end",
      "b2 start",
      "b2 end",
    ]);
    await expect(
      e2e.dispatcher().dispatchBatch({ calls: [] }, e2e.stack.as(e2e.agent)),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    await expect(
      e2e
        .dispatcher()
        .dispatchBatch(
          { calls: Array.from({ length: 101 }, () => ({ tool: "test.echo" })) },
          e2e.stack.as(e2e.agent),
        ),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("at most 100"),
    });
  });

  it("turns a tool failure, output violating its schema, garbage and 50 MB into FAILURE outcomes", async () => {
    const failed = await e2e.call("test.fails");
    expect(failed.status).toBe(CallStatus.FAILURE);
    expect(failed.error).toMatchObject({
      code: "no_rows",
      message: "the table is empty; load data first",
    });
    const bad = await e2e.call("test.badoutput");
    expect(bad.status).toBe(CallStatus.FAILURE);
    expect(bad.error?.code).toBe("invalid_output");
    expect(bad.error?.message).toContain("- /n: must be integer");
    const garbage = await e2e.call("test.garbage");
    expect(garbage.status).toBe(CallStatus.FAILURE);
    expect(garbage.error?.code).toBe("invalid_output");
    const huge = await e2e.call("test.huge");
    expect(huge.status).toBe(CallStatus.FAILURE);
    expect(huge.error?.code).toBe("output_too_large");
    const notJson = await e2e.call("test.notjson");
    expect(notJson.error?.code).toBe("invalid_output");
    // The dispatcher is still answering.
    expect((await e2e.call("test.echo", { text: "still here" })).status).toBe(CallStatus.SUCCESS);
  });

  it("calls a remote HTTP tool", async () => {
    const res = await e2e.call("test.remote", { q: 1 });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ echoed: { q: 1 } });
  });

  it("runs a local tool that speaks HTTP, started by an admin ahead of the first call", async () => {
    const started = await e2e
      .dispatcher()
      .startTool({ tool: "test.local-http" }, e2e.stack.as(e2e.admin));
    expect(started.status?.state).toBe(RuntimeState.RUNNING);
    const res = await e2e.call("test.local-http", { hello: "world" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ pid: started.status?.pid, args: { hello: "world" } });
    await e2e.dispatcher().stopTool({ tool: "test.local-http" }, e2e.stack.as(e2e.admin));
  });

  it("replays an idempotency key after the dispatcher restarts (the outcome lives in NATS KV)", async () => {
    const key = `restart-${Date.now()}`;
    const first = await e2e.call(
      "test.counter",
      { label: "durable" },
      { context: { idempotencyKey: key } },
    );
    await e2e.stack.restartDispatcher();
    const again = await eventually(
      () => e2e.call("test.counter", { label: "durable" }, { context: { idempotencyKey: key } }),
      15_000,
      "the restarted dispatcher to answer",
    );
    expect(again).toMatchObject({ replayed: true, callId: first.callId });
    expect(e2e.log.sideEffects.filter((l) => l === "durable end")).toHaveLength(1);
  });

  it("starts a local tool on demand, reports it, and restarts it after kill -9", async () => {
    const statusOf = async () =>
      (await e2e.dispatcher().getRuntimeStatus({ tool: "data.query" }, e2e.stack.as(e2e.admin)))
        .runtimes[0];
    // An agent sees the running state of the local tools it may call, and of no other.
    expect(
      (await e2e.dispatcher().getRuntimeStatus({}, e2e.stack.as(e2e.stranger))).runtimes,
    ).toEqual([]);
    await expect(
      e2e.dispatcher().getRuntimeStatus({ tool: "data.query" }, e2e.stack.as(e2e.stranger)),
    ).rejects.toMatchObject({ code: Code.NotFound });
    expect((await statusOf())?.state).toBe(RuntimeState.STOPPED);
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const res = await e2e.call(
      "data.query",
      {
        filters: [{ column: "region", op: "eq", value: "north" }],
        columns: ["id", "region"],
        limit: 5,
      },
      { context: { traceId } },
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output?.row_count).toBe(5);
    expect(
      ((res.output?.rows ?? []) as { region: string }[]).every((r) => r.region === "north"),
    ).toBe(true);
    // The first call waited for the tool's start, and its trace says so.
    const events = await e2e.traces.waitFor((e) => e.traceId === traceId, 6);
    expect(events.map((e) => e.customKind || TraceEventKind[e.kind])).toEqual([
      "TOOL_EXECUTE",
      "INSTANCE_START_WAIT",
      "DATA_QUERY",
      "DATA_RESULT",
      "TOOL_RESULT",
      "CALLBACK_SUCCESS",
    ]);
    expect(events[1]?.payload).toMatchObject({ instance: 1, started_for: "call" });
    expect(events[1]?.payload?.waited_ms).toBeGreaterThan(0);
    expect(events[2]?.payload?.sql).toContain("WHERE region = ?");

    const running = await statusOf();
    expect(running?.state).toBe(RuntimeState.RUNNING);
    expect(running?.pid).toBeGreaterThan(0);
    process.kill(running?.pid as number, "SIGKILL");
    const restarted = await eventually(
      async () => {
        const s = await statusOf();
        if (s?.state !== RuntimeState.RUNNING || s.restarts !== 1 || s.pid === running?.pid)
          throw new Error(`state ${s?.state}`);
        return s;
      },
      20_000,
      "the local tool to restart",
    );
    expect(restarted.lastError).toContain("SIGKILL");
    const again = await e2e.call("data.query", { limit: 2 });
    expect(again.output?.row_count).toBe(2);

    const stopped = await e2e
      .dispatcher()
      .stopTool({ tool: "data.query" }, e2e.stack.as(e2e.admin));
    expect(stopped.status?.state).toBe(RuntimeState.STOPPED);
    await expect(
      e2e.dispatcher().stopTool({ tool: "test.echo" }, e2e.stack.as(e2e.admin)),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
  });
});
