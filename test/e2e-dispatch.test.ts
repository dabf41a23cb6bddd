import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  AuditAction,
  CallStatus,
  DispatcherService,
  PermissionDenialSchema,
  ToolNotFoundSchema,
  TraceEventKind,
  ValidationFailureSchema,
} from "@toolmesh/proto";
import { startsCall } from "@toolmesh/records";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startDispatchFixture } from "./dispatch-fixture.js";

// One call through the whole chain (dispatch-fixture.ts) over every transport, the records it
// leaves, and every refusal before a tool runs.
describe("dispatch end to end", () => {
  const e2e = startedForFile(startDispatchFixture);

  it("runs a call through the chain and answers over gRPC, Connect JSON and the grpc-js port", async () => {
    const res = await e2e.call("test.echo", { text: "hello" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ text: "hello", agent: "agent-1" });
    expect(res.attempts).toBe(1);
    expect(res.traceId).toMatch(/^[0-9a-f]{32}$/);

    const connectJson = createClient(
      DispatcherService,
      createConnectTransport({
        baseUrl: e2e.stack.dispatcher.url,
        httpVersion: "1.1",
        useBinaryFormat: false,
      }),
    );
    const viaConnect = await connectJson.dispatch(
      { tool: "test.echo", arguments: { text: "json" } },
      e2e.stack.as(e2e.agent),
    );
    expect(viaConnect.output).toMatchObject({ text: "json" });

    const fast = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: `http://127.0.0.1:${e2e.stack.dispatcherGrpcPort}` }),
    );
    const viaFast = await fast.dispatch(
      { tool: "test.echo", arguments: { text: "fast" } },
      e2e.stack.as(e2e.agent),
    );
    expect(viaFast.output).toMatchObject({ text: "fast" });
    await expect(fast.dispatch({ tool: "nope" }, e2e.stack.as(e2e.agent))).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("records the call's start and end under one trace id, as one record; its trace and outcome derive from them", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await e2e.call(
      "test.echo",
      { text: "traced", password: "hunter2" },
      { context: { traceId, parentId: "span-1" } },
    );
    expect(res.traceId).toBe(traceId);
    const events = await e2e.traces.waitFor((e) => e.traceId === traceId, 4);
    expect(events.map((e) => e.kind)).toEqual([
      TraceEventKind.TOOL_EXECUTE,
      TraceEventKind.CUSTOM,
      TraceEventKind.TOOL_RESULT,
      TraceEventKind.CALLBACK_SUCCESS,
    ]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    expect(events[1]?.customKind).toBe("CACHE_MISS");
    expect(events.every((e) => e.callId === res.callId && e.parentId === "span-1")).toBe(true);
    // One record: Audit chains a call that ends soon after it starts as its end with the start's
    // fields.
    const [record] = await e2e.audits.waitFor((a) => a.callId === res.callId);
    expect(record?.action).toBe(AuditAction.TOOL_CALL);
    expect(record && startsCall(record)).toBe(true);
    expect(record?.arguments).toEqual({ text: "traced", password: "[redacted]" });
    const [outcome] = await e2e.outcomes.waitFor((o) => o.callId === res.callId);
    expect(outcome?.status).toBe(CallStatus.SUCCESS);
    expect(outcome?.output).toMatchObject({ text: "traced" });
  });

  it("refuses a call without a token with UNAUTHENTICATED", async () => {
    await expect(
      e2e.dispatcher().dispatch({ tool: "test.echo", arguments: { text: "x" } }),
    ).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });

  it("refuses an unknown tool with NOT_FOUND listing the tools the caller may use, and audits it", async () => {
    const error = await e2e
      .call("test.ecko", { text: "x" })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    const ce = error as ConnectError;
    expect(ce.code).toBe(Code.NotFound);
    expect(ce.rawMessage).toContain('tool "test.ecko" not found; available tools: test.echo');
    const [detail] = ce.findDetails(ToolNotFoundSchema);
    expect(detail?.availableTools[0]).toBe("test.echo");
    expect(detail?.availableTools).not.toContain("test.disabled");
    const [record] = await e2e.audits.waitFor((a) => a.tool === "test.ecko");
    expect(record).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      errorCode: "NOT_FOUND",
      status: CallStatus.REFUSED,
    });
    const [refused] = await e2e.traces.waitFor((e) => e.tool === "test.ecko");
    expect(refused?.kind).toBe(TraceEventKind.TOOL_REFUSED);
  });

  it("refuses bad arguments with one line per failing path and structured violations", async () => {
    const error = await e2e
      .call("test.echo", { text: "", lines: { start: 0 }, extra: 1 })
      .catch((e: unknown) => ConnectError.from(e));
    const ce = error as ConnectError;
    expect(ce.code).toBe(Code.InvalidArgument);
    expect(ce.rawMessage).toContain('arguments of tool "test.echo" failed validation:');
    expect(ce.rawMessage).toContain("- /lines/start: must be >= 1");
    expect(ce.rawMessage).toContain("- /text: must NOT have fewer than 1 characters");
    expect(ce.rawMessage).toContain("- /extra: is not allowed (no such property)");
    const [detail] = ce.findDetails(ValidationFailureSchema);
    expect(detail?.violations.find((v) => v.path === "/lines/start")).toMatchObject({
      keyword: "minimum",
    });
    await e2e.audits.waitFor((a) => a.tool === "test.echo" && a.errorCode === "INVALID_ARGUMENT");
  });

  it("refuses a caller without a grant with PERMISSION_DENIED saying what is missing", async () => {
    const error = await e2e
      .dispatcher()
      .dispatch({ tool: "test.echo", arguments: { text: "x" } }, e2e.stack.as(e2e.stranger))
      .catch((e: unknown) => ConnectError.from(e));
    const ce = error as ConnectError;
    expect(ce.code).toBe(Code.PermissionDenied);
    const [detail] = ce.findDetails(PermissionDenialSchema);
    expect(detail?.principal).toBe("agent:agent-2");
    expect(detail?.missingScopes).toEqual(["read:test"]);
    await e2e.audits.waitFor((a) => a.agentId === "agent-2" && a.errorCode === "PERMISSION_DENIED");
  });

  it("refuses a disabled tool with FAILED_PRECONDITION and a bad trace id with INVALID_ARGUMENT", async () => {
    await expect(e2e.call("test.disabled")).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(
      e2e.call("test.echo", { text: "x" }, { context: { traceId: "not-hex" } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("context.trace_id"),
    });
  });

  it("refuses malformed requests with INVALID_ARGUMENT naming the field", async () => {
    await expect(e2e.call("")).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("tool: name the tool to call"),
    });
    await expect(
      e2e.call("test.echo", { text: "x" }, { context: { callId: "c".repeat(200) } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("context.call_id"),
    });
    await expect(
      e2e.call("test.echo", { text: "x" }, { context: { idempotencyKey: "k".repeat(300) } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("idempotency_key"),
    });
    await expect(
      e2e.dispatcher().cancel({ callId: "" }, e2e.stack.as(e2e.agent)),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    await expect(
      e2e
        .dispatcher()
        .dispatchBatch({ traceId: "xyz", calls: [{ tool: "test.echo" }] }, e2e.stack.as(e2e.agent)),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("trace_id"),
    });
    await expect(
      e2e.dispatcher().startTool({ tool: "test.echo" }, e2e.stack.as(e2e.admin)),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(
      e2e.dispatcher().getRuntimeStatus({ tool: "no.such" }, e2e.stack.as(e2e.admin)),
    ).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });
});
