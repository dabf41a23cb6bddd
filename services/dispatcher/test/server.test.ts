import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { buckets, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  CallStatus,
  DispatcherService,
  Effect,
  GrantSchema,
  OutcomeSchema,
  PermissionDenialSchema,
  PrincipalKind,
  ResourceKind,
  ToolNotFoundSchema,
  TraceEventSchema,
  ValidationFailureSchema,
} from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type MemoryDispatcher, startMemoryDispatcher } from "./memory-dispatcher.js";

// The Dispatcher's real server on port 0 with in-memory registry and grant snapshots, an
// in-memory record publisher and idempotency store, and a real tool backend (the SDK's
// serveTools on port 0), reached through real gRPC, Connect JSON and grpc-js transports.
describe("Dispatcher server on port 0", () => {
  let d: MemoryDispatcher;
  const call = (
    tool: string,
    args: Record<string, unknown> = {},
    extra: Record<string, unknown> = {},
  ) => d.client.dispatch({ tool, arguments: args as never, ...extra }, as(d.tokens.agent));

  beforeAll(async () => {
    d = await startMemoryDispatcher();
  });
  afterAll(async () => {
    await d?.stop();
  });
  beforeEach(() => {
    d.tools.isReady = true;
    d.grants.isReady = true;
    d.publisher.writable = true;
    d.publisher.full = undefined;
    d.grantAll();
  });

  it("refuses a call without a valid credential with UNAUTHENTICATED, before anything runs", async () => {
    const before = d.publisher.published.length;
    const missing = await failure(
      d.client.dispatch({ tool: "test.echo", arguments: { text: "x" } }),
    );
    expect(missing).toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: "missing credential: send the header authorization: Bearer <token>",
    });
    const forged = await failure(
      d.client.dispatch({ tool: "test.echo", arguments: { text: "x" } }, as(d.tokens.forged)),
    );
    expect(forged).toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: "bearer token rejected: the JWT signature does not verify",
    });
    const fast = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: `http://127.0.0.1:${d.fastPort.port}` }),
    );
    expect((await failure(fast.dispatch({ tool: "test.echo" }))).code).toBe(Code.Unauthenticated);
    expect(d.publisher.published).toHaveLength(before);
  });

  it("runs a call and writes its trace events, audit record and outcome, in order, before answering", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await call(
      "test.echo",
      { text: "hello", password: "hunter2" },
      { context: { traceId, parentId: "span-1" } },
    );
    expect(res).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { text: "hello", agent: "agent-1" },
      attempts: 1,
      traceId,
    });
    expect(d.recordsOf(res.callId)).toEqual([
      "trace TOOL_EXECUTE",
      "trace CUSTOM CACHE_MISS",
      "trace TOOL_RESULT",
      "audit TOOL_CALL SUCCESS",
      "outcome SUCCESS",
    ]);
    const mine = d.publisher.published.filter(
      (p) => (p.value as { callId?: string }).callId === res.callId,
    );
    expect(mine.map((p) => p.subject)).toEqual([
      subjects.trace("dispatcher", traceId),
      subjects.trace("dispatcher", traceId),
      subjects.trace("dispatcher", traceId),
      subjects.audit("dispatcher", "agent-1", "test.echo"),
      subjects.outcome("dispatcher", res.callId),
    ]);
    const events = d.publisher.of(TraceEventSchema).filter((e) => e.callId === res.callId);
    expect(events.map((e) => [e.sequence, e.parentId])).toEqual([
      [1, "span-1"],
      [2, "span-1"],
      [3, "span-1"],
    ]);
    const audit = d.publisher.of(AuditRecordSchema).find((a) => a.callId === res.callId);
    expect(audit?.arguments).toEqual({ text: "hello", password: "[redacted]" });
    const outcome = d.publisher.of(OutcomeSchema).find((o) => o.callId === res.callId);
    expect(outcome?.output).toEqual({ text: "hello", agent: "agent-1" });
    expect(mine.at(-1)?.msgId).toBe(res.callId);
  });

  it("answers the same over Connect JSON and the grpc-js port", async () => {
    const json = createClient(
      DispatcherService,
      createConnectTransport({
        baseUrl: d.listening.url,
        httpVersion: "1.1",
        useBinaryFormat: false,
      }),
    );
    const fast = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: `http://127.0.0.1:${d.fastPort.port}` }),
    );
    for (const c of [json, fast]) {
      const res = await c.dispatch(
        { tool: "test.echo", arguments: { text: "hi" } },
        as(d.tokens.agent),
      );
      expect(res.output).toEqual({ text: "hi", agent: "agent-1" });
      const unknown = await failure(c.dispatch({ tool: "test.ecko" }, as(d.tokens.agent)));
      expect(unknown.code).toBe(Code.NotFound);
      expect(unknown.findDetails(ToolNotFoundSchema)[0]?.availableTools[0]).toBe("test.echo");
    }
  });

  it("refuses an unknown tool with NOT_FOUND, the tools the caller may use nearest first, and records the refusal", async () => {
    const error = await failure(call("test.ecko", { text: "x" }));
    expect(error.code).toBe(Code.NotFound);
    const available = [
      "test.echo",
      "test.meet",
      "test.slow",
      "test.fails",
      "test.counter",
      "test.badoutput",
    ];
    expect(error.rawMessage).toBe(
      `tool "test.ecko" not found; available tools: ${available.join(", ")}`,
    );
    expect(error.findDetails(ToolNotFoundSchema)[0]).toMatchObject({
      requested: "test.ecko",
      availableTools: available,
    });
    const refusal = d.publisher
      .of(AuditRecordSchema)
      .filter((a) => a.tool === "test.ecko")
      .at(-1);
    expect(refusal).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
      errorCode: "NOT_FOUND",
      reason: "unknown tool",
      attempts: 0,
    });
    expect(d.recordsOf(refusal?.callId ?? "")).toEqual([
      "trace TOOL_REFUSED",
      "audit TOOL_REFUSED REFUSED",
    ]);
    // An agent without grants is told that nothing is available, not which tools exist.
    const stranger = await failure(d.client.dispatch({ tool: "test.ecko" }, as(d.tokens.stranger)));
    expect(stranger.rawMessage).toBe('tool "test.ecko" not found; no tools are available to you');
    expect(stranger.findDetails(ToolNotFoundSchema)[0]?.availableTools).toEqual([]);
  });

  it("refuses invalid arguments with INVALID_ARGUMENT, one line a failing path, before the tool runs", async () => {
    const error = await failure(call("test.echo", { text: "", lines: { start: 0 }, extra: 1 }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(
      [
        'arguments of tool "test.echo" failed validation:',
        "- /extra: is not allowed (no such property)",
        "- /text: must NOT have fewer than 1 characters",
        "- /lines/start: must be >= 1",
      ].join("\n"),
    );
    const violations = error.findDetails(ValidationFailureSchema)[0]?.violations ?? [];
    expect(violations.map((v) => [v.path, v.keyword])).toEqual([
      ["/extra", "additionalProperties"],
      ["/text", "minLength"],
      ["/lines/start", "minimum"],
    ]);
    const refusal = d.publisher.of(AuditRecordSchema).at(-1);
    expect(refusal).toMatchObject({
      tool: "test.echo",
      errorCode: "INVALID_ARGUMENT",
      reason: "arguments failed validation",
    });
    expect(d.recordsOf(refusal?.callId ?? "")).toEqual([
      "trace TOOL_REFUSED",
      "audit TOOL_REFUSED REFUSED",
    ]);
  });

  it("refuses a caller without a grant, and one a deny grant names, with PERMISSION_DENIED", async () => {
    const stranger = await failure(
      d.client.dispatch({ tool: "test.echo", arguments: { text: "x" } }, as(d.tokens.stranger)),
    );
    expect(stranger.code).toBe(Code.PermissionDenied);
    expect(stranger.rawMessage).toBe(
      'agent "agent-2" has no allow grant covering scope read:test on tool "test.echo"',
    );
    expect(stranger.findDetails(PermissionDenialSchema)[0]).toMatchObject({
      resource: "test.echo",
      missingScopes: ["read:test"],
      principal: "agent:agent-2",
    });
    const audit = d.publisher.of(AuditRecordSchema).at(-1);
    expect(audit).toMatchObject({
      agentId: "agent-2",
      errorCode: "PERMISSION_DENIED",
      status: CallStatus.REFUSED,
    });

    const deny = buckets.permission.grantKey("g-deny");
    d.grants.put(
      deny,
      create(GrantSchema, {
        id: "g-deny",
        spec: {
          principal: { kind: PrincipalKind.AGENT, id: "agent-1" },
          resource: { kind: ResourceKind.TOOL, pattern: "test.fails" },
          scopes: ["*"],
          effect: Effect.DENY,
          enabled: true,
        },
      }),
    );
    const denied = await failure(call("test.fails"));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.findDetails(PermissionDenialSchema)[0]?.denyGrantId).toBe("g-deny");
    // The grant snapshot is read on every call: removing the deny lets the next call through.
    d.grants.delete(deny);
    expect((await call("test.fails")).status).toBe(CallStatus.FAILURE);
  });

  it("refuses a disabled tool with FAILED_PRECONDITION and records the refusal", async () => {
    const error = await failure(call("test.disabled"));
    expect(error).toMatchObject({
      code: Code.FailedPrecondition,
      rawMessage: 'tool "test.disabled" is disabled; pick another tool',
    });
    expect(d.publisher.of(AuditRecordSchema).at(-1)).toMatchObject({
      tool: "test.disabled",
      errorCode: "FAILED_PRECONDITION",
      reason: "tool disabled",
    });
  });

  it("fails closed with UNAVAILABLE while the registry or the grants are not loaded", async () => {
    d.tools.isReady = false;
    const noTools = await failure(call("test.echo", { text: "x" }));
    expect(noTools).toMatchObject({
      code: Code.Unavailable,
      rawMessage: "the dispatcher has not loaded the tool registry yet; retry in a moment",
    });
    d.tools.isReady = true;
    d.grants.isReady = false;
    const noGrants = await failure(call("test.echo", { text: "x" }));
    expect(noGrants.rawMessage).toBe(
      "the dispatcher has not loaded the permission grants yet; retry in a moment",
    );
  });

  it("runs nothing while its records cannot be written: UNAVAILABLE, or RESOURCE_EXHAUSTED when full", async () => {
    d.backend.sideEffects.length = 0;
    d.publisher.writable = false;
    const down = await failure(call("test.counter", { label: "never" }));
    expect(down).toMatchObject({
      code: Code.Unavailable,
      rawMessage:
        "toolmesh cannot record calls right now (NATS is unreachable), so none may run; the tool did not run. Retry in a few seconds.",
    });
    d.publisher.writable = true;
    d.publisher.full = "stream TOOLMESH_AUDIT is at its byte limit";
    const full = await failure(call("test.counter", { label: "never" }));
    expect(full.code).toBe(Code.ResourceExhausted);
    expect(full.rawMessage).toContain(
      "the record store is full (stream TOOLMESH_AUDIT is at its byte limit)",
    );
    expect(d.backend.sideEffects).toEqual([]);
    expect(d.leases.held).toEqual([]);
  });

  it("reports a tool's failure and output that violates its schema as FAILURE outcomes, not RPC errors", async () => {
    const failed = await call("test.fails");
    expect(failed).toMatchObject({
      status: CallStatus.FAILURE,
      error: { code: "no_rows", message: "the table is empty; load data first" },
      attempts: 1,
    });
    expect(d.recordsOf(failed.callId)).toEqual([
      "trace TOOL_EXECUTE",
      "trace TOOL_RESULT",
      "audit TOOL_CALL FAILURE",
      "outcome FAILURE",
    ]);
    const audit = d.publisher.of(AuditRecordSchema).find((a) => a.callId === failed.callId);
    expect(audit).toMatchObject({
      errorCode: "no_rows",
      errorMessage: "the table is empty; load data first",
    });
    const bad = await call("test.badoutput");
    expect(bad.status).toBe(CallStatus.FAILURE);
    expect(bad.error).toMatchObject({
      code: "invalid_output",
      message:
        'tool "test.badoutput" returned output that violates its output schema:\n- /n: must be integer',
    });
    expect(bad.output).toBeUndefined();
  });

  it("interrupts a call at its timeout, aborts the backend and records INTERRUPTED", async () => {
    const res = await call("test.slow", { ms: 10_000 }, { timeoutMs: 100 });
    expect(res).toMatchObject({
      status: CallStatus.INTERRUPTED,
      error: {
        code: "timeout",
        message: 'tool "test.slow" did not finish within 100 ms; the call was stopped',
      },
    });
    await d.backend.aborted.waitFor((id) => id === res.callId);
    expect(d.recordsOf(res.callId)).toEqual([
      "trace TOOL_EXECUTE",
      "trace TOOL_RESULT",
      "audit TOOL_CALL INTERRUPTED",
      "outcome INTERRUPTED",
    ]);
    expect(d.publisher.of(OutcomeSchema).find((o) => o.callId === res.callId)?.reason).toBe(
      "timeout",
    );
  });

  it("Cancel stops a running call of the caller; others may not, a finished call is gone", async () => {
    const callId = "cancel-me";
    const running = call("test.slow", { ms: 10_000 }, { context: { callId } });
    await d.backend.started.waitFor((id) => id === callId);
    // The call's start record (its lease) is held while it runs, released once it is recorded.
    expect(d.leases.held.map((l) => l.callId)).toEqual([callId]);
    const twice = await failure(call("test.slow", {}, { context: { callId } }));
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
    expect(d.publisher.of(OutcomeSchema).find((o) => o.callId === callId)?.reason).toBe(
      "cancelled",
    );
    expect(d.leases.held).toEqual([]);
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
    const byAdmin = call("test.slow", { ms: 10_000 }, { context: { callId: "admin-cancels" } });
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
        d.publisher
          .of(AuditRecordSchema)
          .filter((a) => a.callId === id)
          .map((a) => a.traceId),
      ).toEqual([res.traceId]);

    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const given = await d.client.dispatchBatch(
      { traceId, calls: [{ tool: "test.echo", arguments: { text: "t" } }] },
      as(d.tokens.agent),
    );
    expect(given.results[0]?.traceId).toBe(traceId);
  });

  it("refuses a batch that is empty, too long or has a bad trace id, running none of it", async () => {
    const before = d.publisher.published.length;
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
    expect(d.publisher.published).toHaveLength(before);
  });

  it("replays the first answer to a repeated idempotency key without running the tool again", async () => {
    d.backend.sideEffects.length = 0;
    const context = { idempotencyKey: "once-only" };
    const first = await call("test.counter", { label: "i1" }, { context });
    const second = await call("test.counter", { label: "i1" }, { context });
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
