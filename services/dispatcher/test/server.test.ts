import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import {
  AuditAction,
  CallStatus,
  DispatcherService,
  Effect,
  GrantSchema,
  PermissionDenialSchema,
  PrincipalKind,
  ResourceKind,
  ToolNotFoundSchema,
  TraceEventKind,
  ValidationFailureSchema,
} from "@toolmesh/proto";
import { callOutcome, traceEvents } from "@toolmesh/records";
import { as, failure } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { beforeEach, describe, expect, it } from "vitest";
import { startMemoryDispatcher } from "./memory-dispatcher.js";

// The Dispatcher's real server on port 0 with in-memory registry and grant snapshots, an
// in-memory record sink and idempotency store, and a real tool backend (the SDK's
// serveTools on port 0), reached through real gRPC, Connect JSON and grpc-js transports:
// authentication, the checks before a tool runs, and the records every call leaves.
describe("Dispatcher server on port 0", () => {
  const d = startedForFile(startMemoryDispatcher);
  beforeEach(() => d.reset());

  it("refuses a call without a valid credential with UNAUTHENTICATED, before anything runs", async () => {
    const before = d.records.records.length;
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
    expect(d.records.records).toHaveLength(before);
  });

  it("runs a read-only call and writes its start and end as one record before answering", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await d.call(
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
    // It ended within TOOLMESH_START_LINGER_MS: its start rode with its end, one record (one
    // write) carrying the start's arguments, instance and deadline.
    expect(d.recordsOf(res.callId)).toEqual(["TOOL_CALL SUCCESS"]);
    const mine = d.records.records.filter((r) => r.callId === res.callId);
    expect(mine[0]).toMatchObject({
      instance: "memory-dispatcher",
      timeoutMs: 5000,
      runtime: "grpc",
    });
    // The trace and the outcome are views of the record, derived by their readers.
    expect(traceEvents(mine).map((e) => [TraceEventKind[e.kind], e.sequence, e.parentId])).toEqual([
      ["TOOL_EXECUTE", 1, "span-1"],
      ["CUSTOM", 2, "span-1"],
      ["TOOL_RESULT", 3, "span-1"],
      ["CALLBACK_SUCCESS", 4, "span-1"],
    ]);
    expect(mine[0]?.arguments).toEqual({ text: "hello", password: "[redacted]" });
    expect(callOutcome(mine)?.output).toEqual({ text: "hello", agent: "agent-1" });
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
    const error = await failure(d.call("test.ecko", { text: "x" }));
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
    const refusal = d.records.records.filter((a) => a.tool === "test.ecko").at(-1);
    expect(refusal).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
      errorCode: "NOT_FOUND",
      reason: "unknown tool",
      attempts: 0,
    });
    expect(d.recordsOf(refusal?.callId ?? "")).toEqual(["TOOL_REFUSED REFUSED"]);
    // An agent without grants is told that nothing is available, not which tools exist.
    const stranger = await failure(d.client.dispatch({ tool: "test.ecko" }, as(d.tokens.stranger)));
    expect(stranger.rawMessage).toBe('tool "test.ecko" not found; no tools are available to you');
    expect(stranger.findDetails(ToolNotFoundSchema)[0]?.availableTools).toEqual([]);
  });

  it("refuses invalid arguments with INVALID_ARGUMENT, one line a failing path, before the tool runs", async () => {
    const error = await failure(d.call("test.echo", { text: "", lines: { start: 0 }, extra: 1 }));
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
    const refusal = d.records.records.at(-1);
    expect(refusal).toMatchObject({
      tool: "test.echo",
      errorCode: "INVALID_ARGUMENT",
      reason: "arguments failed validation",
    });
    expect(d.recordsOf(refusal?.callId ?? "")).toEqual(["TOOL_REFUSED REFUSED"]);
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
    const audit = d.records.records.at(-1);
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
    const denied = await failure(d.call("test.fails"));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.findDetails(PermissionDenialSchema)[0]?.denyGrantId).toBe("g-deny");
    // The grant snapshot is read on every call: removing the deny lets the next call through.
    d.grants.delete(deny);
    expect((await d.call("test.fails")).status).toBe(CallStatus.FAILURE);
  });

  it("refuses a disabled tool with FAILED_PRECONDITION and records the refusal", async () => {
    const error = await failure(d.call("test.disabled"));
    expect(error).toMatchObject({
      code: Code.FailedPrecondition,
      rawMessage: 'tool "test.disabled" is disabled; pick another tool',
    });
    expect(d.records.records.at(-1)).toMatchObject({
      tool: "test.disabled",
      errorCode: "FAILED_PRECONDITION",
      reason: "tool disabled",
    });
  });

  it("fails closed with UNAVAILABLE while the registry or the grants are not loaded", async () => {
    d.tools.isReady = false;
    const noTools = await failure(d.call("test.echo", { text: "x" }));
    expect(noTools).toMatchObject({
      code: Code.Unavailable,
      rawMessage: "the dispatcher has not loaded the tool registry yet; retry in a moment",
    });
    d.tools.isReady = true;
    d.grants.isReady = false;
    const noGrants = await failure(d.call("test.echo", { text: "x" }));
    expect(noGrants.rawMessage).toBe(
      "the dispatcher has not loaded the permission grants yet; retry in a moment",
    );
  });

  it("runs nothing while its records cannot be written: UNAVAILABLE, or RESOURCE_EXHAUSTED when full", async () => {
    d.backend.sideEffects.length = 0;
    d.records.writable = false;
    const down = await failure(d.call("test.counter", { label: "never" }));
    expect(down).toMatchObject({
      code: Code.Unavailable,
      rawMessage:
        "toolmesh cannot record calls right now (NATS is unreachable), so none may run; the tool did not run. Retry in a few seconds.",
    });
    d.records.writable = true;
    d.records.full = "stream TOOLMESH_RECORDS is at its byte limit";
    const full = await failure(d.call("test.counter", { label: "never" }));
    expect(full.code).toBe(Code.ResourceExhausted);
    expect(full.rawMessage).toContain(
      "the record store is full (stream TOOLMESH_RECORDS is at its byte limit)",
    );
    expect(d.backend.sideEffects).toEqual([]);
  });
});
