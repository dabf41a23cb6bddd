import { Code } from "@toolmesh/errors";
import { AuditAction, CallStatus } from "@toolmesh/proto";
import { callOutcome } from "@toolmesh/records";
import { as, failure } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { beforeEach, describe, expect, it } from "vitest";
import { startMemoryDispatcher } from "./memory-dispatcher.js";

// The same in-process Dispatcher (memory-dispatcher.ts) once a tool runs: failures and bad
// output as outcomes, timeouts, Cancel, batches, idempotency keys, starting and stopping tools.
describe("Dispatcher server on port 0", () => {
  const d = startedForFile(startMemoryDispatcher);
  beforeEach(() => d.reset());

  it("reports a tool's failure and output that violates its schema as FAILURE outcomes, not RPC errors", async () => {
    const failed = await d.call("test.fails");
    expect(failed).toMatchObject({
      status: CallStatus.FAILURE,
      error: { code: "no_rows", message: "the table is empty; load data first" },
      attempts: 1,
    });
    expect(d.recordsOf(failed.callId)).toEqual(["TOOL_CALL FAILURE"]);
    const audit = d.records.records.find(
      (a) => a.callId === failed.callId && a.action === AuditAction.TOOL_CALL,
    );
    expect(audit).toMatchObject({
      errorCode: "no_rows",
      errorMessage: "the table is empty; load data first",
    });
    const bad = await d.call("test.badoutput");
    expect(bad.status).toBe(CallStatus.FAILURE);
    expect(bad.error).toMatchObject({
      code: "invalid_output",
      message:
        'tool "test.badoutput" returned output that violates its output schema:\n- /n: must be integer',
    });
    expect(bad.output).toBeUndefined();
  });

  it("takes a deadline in microseconds, as Go's gRPC clients send it", async () => {
    const headers = { ...as(d.tokens.agent).headers, "grpc-timeout": "2500123u" };
    const res = await d.client.dispatch(
      { tool: "test.echo", arguments: { text: "micro" } },
      { headers },
    );
    expect(res).toMatchObject({ status: CallStatus.SUCCESS, output: { text: "micro" } });
  });

  it("interrupts a call at its timeout, aborts the backend and records INTERRUPTED", async () => {
    const res = await d.call("test.slow", { ms: 10_000 }, { timeoutMs: 100 });
    expect(res).toMatchObject({
      status: CallStatus.INTERRUPTED,
      error: {
        code: "timeout",
        message: 'tool "test.slow" did not finish within 100 ms; the call was stopped',
      },
    });
    await d.backend.aborted.waitFor((id) => id === res.callId);
    expect(d.recordsOf(res.callId)).toEqual(["TOOL_START UNSPECIFIED", "TOOL_CALL INTERRUPTED"]);
    expect(callOutcome(d.records.records.filter((r) => r.callId === res.callId))?.reason).toBe(
      "timeout",
    );
  });

  it("Cancel stops a running call of the caller; others may not, a finished call is gone", async () => {
    const callId = "cancel-me";
    const running = d.call("test.slow", { ms: 10_000 }, { context: { callId } });
    await d.backend.started.waitFor((id) => id === callId);
    // A read-only tool runs alongside its start record, which waits TOOLMESH_START_LINGER_MS for
    // the end and, the call still running, is written alone.
    expect(d.recordsOf(callId)).toEqual([]);
    await d.stored.waitFor((r) => r.callId === callId);
    expect(d.recordsOf(callId)).toEqual(["TOOL_START UNSPECIFIED"]);
    const twice = await failure(d.call("test.slow", {}, { context: { callId } }));
    expect(twice).toMatchObject({
      code: Code.AlreadyExists,
      rawMessage:
        'call "cancel-me" is already running; give each call its own call_id (or leave it empty)',
    });
    const other = await failure(d.client.cancel({ callId }, as(d.tokens.stranger)));
    expect(other).toMatchObject({
      code: Code.PermissionDenied,
      rawMessage: 'call "cancel-me" belongs to another agent; only it or an admin may cancel it',
    });
    await d.client.cancel({ callId }, as(d.tokens.agent));
    expect(await running).toMatchObject({
      status: CallStatus.INTERRUPTED,
      error: { code: "cancelled", message: "the call was cancelled" },
    });
    await d.backend.aborted.waitFor((id) => id === callId);
    expect(callOutcome(d.records.records.filter((r) => r.callId === callId))?.reason).toBe(
      "cancelled",
    );
    const gone = await failure(d.client.cancel({ callId }, as(d.tokens.agent)));
    expect(gone).toMatchObject({
      code: Code.NotFound,
      rawMessage: 'running call "cancel-me" not found; it may have finished already',
    });
    const empty = await failure(d.client.cancel({ callId: "" }, as(d.tokens.agent)));
    expect(empty).toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "call_id: name the call to cancel",
    });

    // An admin may cancel any agent's call.
    const byAdmin = d.call("test.slow", { ms: 10_000 }, { context: { callId: "admin-cancels" } });
    await d.backend.started.waitFor((id) => id === "admin-cancels");
    await d.client.cancel({ callId: "admin-cancels" }, as(d.tokens.admin));
    expect((await byAdmin).error?.code).toBe("cancelled");
  });

  it("runs a batch: read-only calls in parallel, side effects one at a time in request order, results in request order", async () => {
    d.backend.sideEffects.length = 0;
    const res = await d.client.dispatchBatch(
      {
        calls: [
          { tool: "test.counter", arguments: { label: "b1", ms: 50 } },
          { tool: "test.meet" },
          { tool: "missing.tool" },
          { tool: "test.meet" },
          { tool: "test.counter", arguments: { label: "b2" } },
          { tool: "test.echo", arguments: { text: "" } },
        ],
      },
      as(d.tokens.agent),
    );
    expect(res.results.map((r) => CallStatus[r.status])).toEqual([
      "SUCCESS",
      "SUCCESS",
      "REFUSED",
      "SUCCESS",
      "SUCCESS",
      "REFUSED",
    ]);
    // Each test.meet finishes only when the other runs at the same time.
    expect(res.results[1]?.output).toEqual({ met: true });
    expect(d.backend.sideEffects).toEqual(["b1 start", "b1 end", "b2 start", "b2 end"]);
    expect(res.results[0]?.output).toEqual({ count: 1 });
    expect(res.results[4]?.output).toEqual({ count: 2 });
    expect(res.results[2]).toMatchObject({
      refusalCode: "NOT_FOUND",
      error: {
        code: "NOT_FOUND",
        message: expect.stringMatching(/^tool "missing.tool" not found; /),
      },
    });
    expect(res.results[5]).toMatchObject({
      refusalCode: "INVALID_ARGUMENT",
      error: {
        message:
          'arguments of tool "test.echo" failed validation:\n- /text: must NOT have fewer than 1 characters',
      },
    });
    expect(res.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(res.results.map((r) => r.traceId))).toEqual(new Set([res.traceId]));
    const callIds = new Set(res.results.map((r) => r.callId));
    expect(callIds.size).toBe(6);
    for (const id of callIds)
      expect(
        new Set(d.records.records.filter((a) => a.callId === id).map((a) => a.traceId)),
      ).toEqual(new Set([res.traceId]));

    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const given = await d.client.dispatchBatch(
      { traceId, calls: [{ tool: "test.echo", arguments: { text: "t" } }] },
      as(d.tokens.agent),
    );
    expect(given.results[0]?.traceId).toBe(traceId);
  });

  it("refuses a batch that is empty, too long or has a bad trace id, running none of it", async () => {
    const before = d.records.records.length;
    const cases: [Parameters<typeof d.client.dispatchBatch>[0], string][] = [
      [{ calls: [] }, "calls: send at least one call"],
      [
        { calls: Array.from({ length: 101 }, () => ({ tool: "test.echo" })) },
        "calls: at most 100 calls per batch; got 101, split it",
      ],
      [
        { traceId: "xyz", calls: [{ tool: "test.echo" }] },
        "trace_id: expected a W3C trace id: 32 lowercase hex characters; or leave it empty",
      ],
    ];
    for (const [req, message] of cases) {
      const error = await failure(d.client.dispatchBatch(req, as(d.tokens.agent)));
      expect(error).toMatchObject({ code: Code.InvalidArgument, rawMessage: message });
    }
    expect(d.records.records).toHaveLength(before);
  });

  it("replays the first answer to a repeated idempotency key without running the tool again", async () => {
    d.backend.sideEffects.length = 0;
    const context = { idempotencyKey: "once-only" };
    const first = await d.call("test.counter", { label: "i1" }, { context });
    const second = await d.call("test.counter", { label: "i1" }, { context });
    expect(first.replayed).toBe(false);
    expect(second).toMatchObject({ replayed: true, callId: first.callId, output: first.output });
    expect(d.backend.sideEffects).toEqual(["i1 start", "i1 end"]);
  });

  it("keeps starting and stopping local and docker tools for admins; an agent sees only tools it may call", async () => {
    const agent = await failure(d.client.startTool({ tool: "test.echo" }, as(d.tokens.agent)));
    expect(agent).toMatchObject({
      code: Code.PermissionDenied,
      rawMessage: "StartTool needs the role admin; your token has the roles agent",
    });
    const notLocal = await failure(d.client.startTool({ tool: "test.echo" }, as(d.tokens.admin)));
    expect(notLocal).toMatchObject({
      code: Code.FailedPrecondition,
      rawMessage:
        'tool "test.echo" has a grpc runtime; only local and docker tools have a process or container to start or stop',
    });
    expect((await d.client.getRuntimeStatus({}, as(d.tokens.admin))).runtimes).toEqual([]);
    const hidden = await failure(
      d.client.getRuntimeStatus({ tool: "test.echo" }, as(d.tokens.stranger)),
    );
    expect(hidden).toMatchObject({ code: Code.NotFound, rawMessage: 'tool "test.echo" not found' });
  });
});
