import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  AuditAction,
  type AuditRecord,
  CallStatus,
  DispatcherService,
  InvokeRequestSchema,
  InvokeResponseSchema,
  LocalProtocol,
  type Outcome,
  PermissionDenialSchema,
  RuntimeState,
  ToolNotFoundSchema,
  ToolStatus,
  type TraceEvent,
  TraceEventKind,
  ValidationFailureSchema,
} from "@toolmesh/proto";
import { type ServedTools, serveTools } from "@toolmesh/sdk";
import {
  type Collector,
  chainTestTools,
  collectRecords,
  eventually,
  repoRoot,
  startStack,
  type TestStack,
  toolLog,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataQueryInputSchema, dataQueryOutputSchema } from "../libs/sdk/src/examples/index.js";

// The whole chain with real processes: nats-server, registry, permission, dispatcher, an SDK
// backend, a raw gRPC backend that misbehaves, an HTTP tool and a local tool process.
describe("dispatch end to end", () => {
  let stack: TestStack;
  let served: ServedTools;
  let rawBackend: grpc.Server;
  let remote: http.Server;
  let agent: string;
  let stranger: string;
  let admin: string;
  const log = toolLog();
  let traces: Collector<TraceEvent>;
  let audits: Collector<AuditRecord>;
  let outcomes: Collector<Outcome>;
  const remoteHits = new Map<string, number>();

  const dispatcher = () => stack.dispatcherClient();
  const call = (
    tool: string,
    args: Record<string, unknown> = {},
    extra: Record<string, unknown> = {},
  ) => dispatcher().dispatch({ tool, arguments: args as never, ...extra }, stack.as(agent));

  beforeAll(async () => {
    stack = await startStack({
      serviceEnv: { dispatcher: { TOOLMESH_LOCAL_IDLE_TIMEOUT_MS: "60000" } },
    });
    ({ traces, audits, outcomes } = collectRecords(stack.nc));
    admin = stack.adminToken;
    agent = await stack.agentToken("agent-1", { onBehalfOf: "" });
    stranger = await stack.agentToken("agent-2");
    await stack.grantAll("agent-1");

    served = await serveTools(chainTestTools(log), {
      registry: { url: stack.registry.url, token: admin },
    });

    rawBackend = await startRawBackend();
    remote = await startRemote(remoteHits);
    const remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
    const rawAddress = `127.0.0.1:${(rawBackend as unknown as { port: number }).port}`;
    const register = (spec: Record<string, unknown>) =>
      stack.registryClient.registerTool(
        {
          tool: {
            description: "a test tool",
            inputSchema: { type: "object" },
            status: ToolStatus.ACTIVE,
            ...spec,
          } as never,
        },
        stack.as(admin),
      );
    await register({
      name: "test.garbage",
      runtime: { kind: { case: "grpc", value: { address: rawAddress } } },
    });
    await register({
      name: "test.huge",
      runtime: { kind: { case: "grpc", value: { address: rawAddress } } },
    });
    await register({
      name: "test.flaky",
      idempotent: true,
      retryPolicy: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/flaky` } } },
    });
    await register({
      name: "test.flaky-once",
      idempotent: false,
      retryPolicy: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/always503` } } },
    });
    await register({
      name: "test.remote",
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/ok` } } },
    });
    await register({
      name: "test.notjson",
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/notjson` } } },
    });
    await register({
      name: "test.disabled",
      status: ToolStatus.DISABLED,
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/ok` } } },
    });
    await register({
      name: "data.query",
      description: "Query the orders table.",
      inputSchema: dataQueryInputSchema,
      outputSchema: dataQueryOutputSchema,
      requiredScopes: ["read:data"],
      idempotent: true,
      runtime: {
        kind: {
          case: "local",
          value: {
            command: process.execPath,
            args: ["--import", "tsx", "libs/sdk/src/examples/data-tool-main.ts"],
            workingDir: repoRoot,
            protocol: LocalProtocol.GRPC,
          },
        },
      },
    });
    await register({
      name: "test.local-http",
      runtime: {
        kind: {
          case: "local",
          value: {
            command: process.execPath,
            args: ["services/dispatcher/test/http-tool.mjs"],
            workingDir: repoRoot,
            protocol: LocalProtocol.HTTP,
          },
        },
      },
    });
    // The dispatcher sees registry and grant changes through its watches.
    await eventually(
      () => call("test.flaky-once"),
      10_000,
      "dispatcher sees the tools and the grant",
    );
  });

  afterAll(async () => {
    await served?.close();
    rawBackend?.forceShutdown();
    remote?.close();
    await stack?.stop();
  });

  it("runs a call through the chain and answers over gRPC, Connect JSON and the grpc-js port", async () => {
    const res = await call("test.echo", { text: "hello" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ text: "hello", agent: "agent-1" });
    expect(res.attempts).toBe(1);
    expect(res.traceId).toMatch(/^[0-9a-f]{32}$/);

    const connectJson = createClient(
      DispatcherService,
      createConnectTransport({
        baseUrl: stack.dispatcher.url,
        httpVersion: "1.1",
        useBinaryFormat: false,
      }),
    );
    const viaConnect = await connectJson.dispatch(
      { tool: "test.echo", arguments: { text: "json" } },
      stack.as(agent),
    );
    expect(viaConnect.output).toMatchObject({ text: "json" });

    const fast = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: `http://127.0.0.1:${stack.dispatcherGrpcPort}` }),
    );
    const viaFast = await fast.dispatch(
      { tool: "test.echo", arguments: { text: "fast" } },
      stack.as(agent),
    );
    expect(viaFast.output).toMatchObject({ text: "fast" });
    await expect(fast.dispatch({ tool: "nope" }, stack.as(agent))).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("publishes the trace, audit record and outcome in order under one trace id", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await call(
      "test.echo",
      { text: "traced", password: "hunter2" },
      { context: { traceId, parentId: "span-1" } },
    );
    expect(res.traceId).toBe(traceId);
    const events = await traces.waitFor((e) => e.traceId === traceId, 3);
    expect(events.map((e) => e.kind)).toEqual([
      TraceEventKind.TOOL_EXECUTE,
      TraceEventKind.CUSTOM,
      TraceEventKind.TOOL_RESULT,
    ]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(events[1]?.customKind).toBe("CACHE_MISS");
    expect(events.every((e) => e.callId === res.callId && e.parentId === "span-1")).toBe(true);
    const [record] = await audits.waitFor((a) => a.callId === res.callId);
    expect(record?.action).toBe(AuditAction.TOOL_CALL);
    expect(record?.arguments).toEqual({ text: "traced", password: "[redacted]" });
    const [outcome] = await outcomes.waitFor((o) => o.callId === res.callId);
    expect(outcome?.status).toBe(CallStatus.SUCCESS);
    expect(outcome?.output).toMatchObject({ text: "traced" });
  });

  it("refuses a call without a token with UNAUTHENTICATED", async () => {
    await expect(
      dispatcher().dispatch({ tool: "test.echo", arguments: { text: "x" } }),
    ).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });

  it("refuses an unknown tool with NOT_FOUND listing the tools the caller may use, and audits it", async () => {
    const error = await call("test.ecko", { text: "x" }).catch((e: unknown) =>
      ConnectError.from(e),
    );
    expect(error).toBeInstanceOf(ConnectError);
    const ce = error as ConnectError;
    expect(ce.code).toBe(Code.NotFound);
    expect(ce.rawMessage).toContain('tool "test.ecko" not found; available tools: test.echo');
    const [detail] = ce.findDetails(ToolNotFoundSchema);
    expect(detail?.availableTools[0]).toBe("test.echo");
    expect(detail?.availableTools).not.toContain("test.disabled");
    const [record] = await audits.waitFor((a) => a.tool === "test.ecko");
    expect(record).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      errorCode: "NOT_FOUND",
      status: CallStatus.REFUSED,
    });
    const [refused] = await traces.waitFor((e) => e.tool === "test.ecko");
    expect(refused?.kind).toBe(TraceEventKind.TOOL_REFUSED);
  });

  it("refuses bad arguments with one line per failing path and structured violations", async () => {
    const error = await call("test.echo", { text: "", lines: { start: 0 }, extra: 1 }).catch(
      (e: unknown) => ConnectError.from(e),
    );
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
    await audits.waitFor((a) => a.tool === "test.echo" && a.errorCode === "INVALID_ARGUMENT");
  });

  it("refuses a caller without a grant with PERMISSION_DENIED saying what is missing", async () => {
    const error = await dispatcher()
      .dispatch({ tool: "test.echo", arguments: { text: "x" } }, stack.as(stranger))
      .catch((e: unknown) => ConnectError.from(e));
    const ce = error as ConnectError;
    expect(ce.code).toBe(Code.PermissionDenied);
    const [detail] = ce.findDetails(PermissionDenialSchema);
    expect(detail?.principal).toBe("agent:agent-2");
    expect(detail?.missingScopes).toEqual(["read:test"]);
    await audits.waitFor((a) => a.agentId === "agent-2" && a.errorCode === "PERMISSION_DENIED");
  });

  it("refuses a disabled tool with FAILED_PRECONDITION and a bad trace id with INVALID_ARGUMENT", async () => {
    await expect(call("test.disabled")).rejects.toMatchObject({ code: Code.FailedPrecondition });
    await expect(
      call("test.echo", { text: "x" }, { context: { traceId: "not-hex" } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("context.trace_id"),
    });
  });

  it("refuses malformed requests with INVALID_ARGUMENT naming the field", async () => {
    await expect(call("")).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("tool: name the tool to call"),
    });
    await expect(
      call("test.echo", { text: "x" }, { context: { callId: "c".repeat(200) } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("context.call_id"),
    });
    await expect(
      call("test.echo", { text: "x" }, { context: { idempotencyKey: "k".repeat(300) } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("idempotency_key"),
    });
    await expect(dispatcher().cancel({ callId: "" }, stack.as(agent))).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    await expect(
      dispatcher().dispatchBatch(
        { traceId: "xyz", calls: [{ tool: "test.echo" }] },
        stack.as(agent),
      ),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("trace_id"),
    });
    await expect(
      dispatcher().startTool({ tool: "test.echo" }, stack.as(admin)),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(
      dispatcher().getRuntimeStatus({ tool: "no.such" }, stack.as(admin)),
    ).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("interrupts a call that runs past its deadline and aborts the backend", async () => {
    const res = await call("test.slow", { ms: 5000 }, { timeoutMs: 200 });
    expect(res.status).toBe(CallStatus.INTERRUPTED);
    expect(res.error?.code).toBe("timeout");
    await log.aborted.waitFor((id) => id === res.callId);
    const [outcome] = await outcomes.waitFor((o) => o.callId === res.callId);
    expect(outcome?.reason).toBe("timeout");
  });

  it("Cancel interrupts a running call; another agent may not cancel it", async () => {
    const callId = `cancel-${Date.now()}`;
    const running = call("test.slow", { ms: 10_000 }, { context: { callId } });
    await log.started.waitFor((id) => id === callId);
    await expect(call("test.slow", {}, { context: { callId } })).rejects.toMatchObject({
      code: Code.AlreadyExists,
      rawMessage: expect.stringContaining("already running"),
    });
    await expect(dispatcher().cancel({ callId }, stack.as(stranger))).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
    await dispatcher().cancel({ callId }, stack.as(agent));
    const res = await running;
    expect(res.status).toBe(CallStatus.INTERRUPTED);
    expect(res.error?.code).toBe("cancelled");
    await expect(dispatcher().cancel({ callId }, stack.as(agent))).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("retries an idempotent tool on 503 and traces every attempt", async () => {
    const res = await call("test.flaky");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.attempts).toBe(3);
    expect(remoteHits.get("/flaky")).toBe(3);
    const attempts = await traces.waitFor(
      (e) => e.callId === res.callId && e.kind === TraceEventKind.TOOL_ATTEMPT,
      3,
    );
    expect(attempts.map((e) => e.payload?.ok)).toEqual([false, false, true]);
  });

  it("does not retry a tool that is not idempotent", async () => {
    const before = remoteHits.get("/always503") ?? 0;
    const res = await call("test.flaky-once");
    expect(res.status).toBe(CallStatus.FAILURE);
    expect(res.error?.code).toBe("backend_unavailable");
    expect(res.attempts).toBe(1);
    expect(remoteHits.get("/always503")).toBe(before + 1);
  });

  it("replays the first outcome for a repeated idempotency key without running the tool", async () => {
    const key = `idem-${Date.now()}`;
    const first = await call(
      "test.counter",
      { label: "once" },
      { context: { idempotencyKey: key } },
    );
    const second = await call(
      "test.counter",
      { label: "once" },
      { context: { idempotencyKey: key } },
    );
    expect(first.replayed).toBe(false);
    expect(second.replayed).toBe(true);
    expect(second.callId).toBe(first.callId);
    expect(second.output).toEqual(first.output);
    expect(log.sideEffects.filter((l) => l === "once end")).toHaveLength(1);
  });

  it("runs a batch: results in order, refusals as results, side effects one at a time in order", async () => {
    const res = await dispatcher().dispatchBatch(
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
      stack.as(agent),
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
    expect(log.sideEffects.filter((l) => l.startsWith("b"))).toEqual([
      "b1 start",
      "b1 end",
      "b2 start",
      "b2 end",
    ]);
    await expect(dispatcher().dispatchBatch({ calls: [] }, stack.as(agent))).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    await expect(
      dispatcher().dispatchBatch(
        { calls: Array.from({ length: 101 }, () => ({ tool: "test.echo" })) },
        stack.as(agent),
      ),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("at most 100"),
    });
  });

  it("turns a tool failure, output violating its schema, garbage and 50 MB into FAILURE outcomes", async () => {
    const failed = await call("test.fails");
    expect(failed.status).toBe(CallStatus.FAILURE);
    expect(failed.error).toMatchObject({
      code: "no_rows",
      message: "the table is empty; load data first",
    });
    const bad = await call("test.badoutput");
    expect(bad.status).toBe(CallStatus.FAILURE);
    expect(bad.error?.code).toBe("invalid_output");
    expect(bad.error?.message).toContain("- /n: must be integer");
    const garbage = await call("test.garbage");
    expect(garbage.status).toBe(CallStatus.FAILURE);
    expect(garbage.error?.code).toBe("invalid_output");
    const huge = await call("test.huge");
    expect(huge.status).toBe(CallStatus.FAILURE);
    expect(huge.error?.code).toBe("output_too_large");
    const notJson = await call("test.notjson");
    expect(notJson.error?.code).toBe("invalid_output");
    // The dispatcher is still answering.
    expect((await call("test.echo", { text: "still here" })).status).toBe(CallStatus.SUCCESS);
  });

  it("calls a remote HTTP tool", async () => {
    const res = await call("test.remote", { q: 1 });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ echoed: { q: 1 } });
  });

  it("runs a local tool that speaks HTTP, started by an admin ahead of the first call", async () => {
    const started = await dispatcher().startTool({ tool: "test.local-http" }, stack.as(admin));
    expect(started.status?.state).toBe(RuntimeState.RUNNING);
    const res = await call("test.local-http", { hello: "world" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ pid: started.status?.pid, args: { hello: "world" } });
    await dispatcher().stopTool({ tool: "test.local-http" }, stack.as(admin));
  });

  it("replays an idempotency key after the dispatcher restarts (the outcome lives in NATS KV)", async () => {
    const key = `restart-${Date.now()}`;
    const first = await call(
      "test.counter",
      { label: "durable" },
      { context: { idempotencyKey: key } },
    );
    await stack.restartDispatcher();
    const again = await eventually(
      () => call("test.counter", { label: "durable" }, { context: { idempotencyKey: key } }),
      15_000,
      "the restarted dispatcher to answer",
    );
    expect(again).toMatchObject({ replayed: true, callId: first.callId });
    expect(log.sideEffects.filter((l) => l === "durable end")).toHaveLength(1);
  });

  it("starts a local tool on demand, reports it, and restarts it after kill -9", async () => {
    const statusOf = async () =>
      (await dispatcher().getRuntimeStatus({ tool: "data.query" }, stack.as(admin))).runtimes[0];
    // An agent sees the running state of the local tools it may call, and of no other.
    expect((await dispatcher().getRuntimeStatus({}, stack.as(stranger))).runtimes).toEqual([]);
    await expect(
      dispatcher().getRuntimeStatus({ tool: "data.query" }, stack.as(stranger)),
    ).rejects.toMatchObject({ code: Code.NotFound });
    expect((await statusOf())?.state).toBe(RuntimeState.STOPPED);
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const res = await call(
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
    const events = await traces.waitFor((e) => e.traceId === traceId, 4);
    expect(events.map((e) => TraceEventKind[e.kind])).toEqual([
      "TOOL_EXECUTE",
      "DATA_QUERY",
      "DATA_RESULT",
      "TOOL_RESULT",
    ]);
    expect(events[1]?.payload?.sql).toContain("WHERE region = ?");

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
    const again = await call("data.query", { limit: 2 });
    expect(again.output?.row_count).toBe(2);

    const stopped = await dispatcher().stopTool({ tool: "data.query" }, stack.as(admin));
    expect(stopped.status?.state).toBe(RuntimeState.STOPPED);
    await expect(
      dispatcher().stopTool({ tool: "test.echo" }, stack.as(admin)),
    ).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
  });
});

/** A gRPC backend that answers test.garbage with bytes that are no InvokeResponse and test.huge with 50 MB. */
async function startRawBackend(): Promise<grpc.Server> {
  const server = new grpc.Server({ "grpc.max_send_message_length": -1 });
  const definition = {
    invoke: {
      path: "/toolmesh.backend.v1.ToolBackendService/Invoke",
      requestStream: false,
      responseStream: true,
      requestSerialize: (v: Buffer) => v,
      requestDeserialize: (b: Buffer) => fromBinary(InvokeRequestSchema, b),
      responseSerialize: (v: Buffer) => v,
      responseDeserialize: (b: Buffer) => b,
    },
  };
  server.addService(definition as unknown as grpc.ServiceDefinition, {
    invoke: (call: grpc.ServerWritableStream<{ tool: string }, Buffer>) => {
      if (call.request.tool === "test.huge") {
        const output = { blob: "x".repeat(50 * 1024 * 1024) };
        call.write(
          Buffer.from(
            toBinary(
              InvokeResponseSchema,
              create(InvokeResponseSchema, { message: { case: "result", value: { output } } }),
            ),
          ),
        );
      } else {
        call.write(Buffer.from([0x0f, 0xff, 0xff, 0xff]));
      }
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  (server as unknown as { port: number }).port = port;
  return server;
}

/** An HTTP tool server: /flaky fails twice with 503, /always503 always does, /ok echoes, /notjson is text. */
async function startRemote(hits: Map<string, number>): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      if ((path === "/flaky" && n <= 2) || path === "/always503") res.writeHead(503).end("busy");
      else if (path === "/notjson")
        res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      else if (path === "/flaky")
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      else
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ echoed: JSON.parse(body || "{}") }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
