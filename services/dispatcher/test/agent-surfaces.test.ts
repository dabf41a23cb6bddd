import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Code } from "@toolmesh/errors";
import {
  AuditAction,
  type AuditRecord,
  CallStatus,
  type Outcome,
  ToolCallDialect,
  type TraceEvent,
  TraceEventKind,
} from "@toolmesh/proto";
import {
  defineTool,
  registerTools,
  runToolCalls,
  type ServedTools,
  serveTools,
} from "@toolmesh/sdk";
import {
  Collector,
  collectRecords,
  echoTool,
  eventually,
  freePort,
  startStack,
  strictTextSchema,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Every way an agent reaches a tool besides Dispatch — the plain HTTP facade, a model's
// tool-call reply, MCP in both protocol revisions — against real processes, each leaving the
// same records as Dispatch.
describe("agent surfaces", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: string;
  let traces: Collector<TraceEvent>;
  let audits: Collector<AuditRecord>;
  let outcomes: Collector<Outcome>;
  const sideEffects: string[] = [];
  const url = (path: string) => `${stack.dispatcher.url}${path}`;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  /** What a call left behind, without the ids and times that differ between two calls. */
  const recordsOf = async (find: (a: AuditRecord) => boolean) => {
    const [record] = await audits.waitFor(find);
    if (!record) throw new Error("no audit record");
    const ran = record.action === AuditAction.TOOL_CALL;
    const events = await traces.waitFor((e) => e.callId === record.callId, ran ? 2 : 1);
    const outcome = ran
      ? (await outcomes.waitFor((o) => o.callId === record.callId))[0]
      : undefined;
    return {
      audit: {
        action: record.action,
        tool: record.tool,
        agentId: record.agentId,
        status: record.status,
        errorCode: record.errorCode,
        arguments: record.arguments,
        source: record.source,
      },
      trace: events.map((e) => [TraceEventKind[e.kind], e.tool, e.agentId]),
      outcome: outcome && { status: outcome.status, output: outcome.output, tool: outcome.tool },
    };
  };
  const byText = (text: string) => (a: AuditRecord) => a.arguments?.text === text;

  beforeAll(async () => {
    const registryPort = await freePort();
    // GET /tools reads the groups from the Registry: the Dispatcher is told where it listens.
    stack = await startStack({
      serviceEnv: {
        registry: { TOOLMESH_REGISTRY_PORT: String(registryPort) },
        dispatcher: { TOOLMESH_REGISTRY_URL: `http://127.0.0.1:${registryPort}` },
      },
    });
    ({ traces, audits, outcomes } = collectRecords(stack.nc));
    agent = await stack.agentToken("surface-agent");
    await stack.grantAll("surface-agent");
    const tools = [
      echoTool("data.echo", {
        idempotent: true,
        inputSchema: strictTextSchema({ limit: { type: "integer", minimum: 1 } }),
        outputSchema: { type: "object", properties: { text: { type: "string" } } },
      }),
      defineTool({
        name: "mail.send",
        description: "Records a mail; a side effect.",
        sideEffects: true,
        inputSchema: { type: "object", required: ["to"], properties: { to: { type: "string" } } },
        handler: (args: { to: string }) => {
          sideEffects.push(args.to);
          return { sent: args.to };
        },
      }),
      defineTool({
        name: "data.fail",
        description: "Always fails.",
        inputSchema: { type: "object", properties: { text: { type: "string" } } },
        handler: () => {
          throw new Error("the data source is down");
        },
      }),
    ];
    served = await serveTools(tools);
    await registerTools(tools, served.address, {
      url: stack.registry.url,
      token: stack.adminToken,
    });
  });

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("facade: GET /health needs no credential; GET /tools and POST /run_tool need one", async () => {
    // SERVING once the registry and grant snapshots are loaded (calls would fail closed before).
    const health = await eventually(async () => {
      const res = await fetch(url("/health"));
      if (res.status !== 200) throw new Error(`health answered ${res.status}`);
      return res;
    });
    expect(await health.json()).toEqual({ status: "SERVING" });

    const anonymous = await fetch(url("/tools"));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: "unauthenticated" });

    const table = await fetch(url("/tools"), { headers: bearer(agent) });
    expect(table.status).toBe(200);
    const body = (await table.json()) as {
      runtimes: { kind: string; tool_count: number }[];
      tools: { name: string; runtime: string; state: string; side_effects: boolean }[];
    };
    expect(body.tools.map((t) => t.name)).toEqual(["data.echo", "data.fail", "mail.send"]);
    expect(body.runtimes).toEqual([{ kind: "grpc", tool_count: 3 }]);
    expect(body.tools[2]).toMatchObject({ runtime: "grpc", side_effects: true, state: "EXTERNAL" });
  });

  it("facade: POST /run_tool runs the chain and leaves the same records as Dispatch", async () => {
    const viaDispatch = await stack
      .dispatcherClient()
      .dispatch({ tool: "data.echo", arguments: { text: "same-a" } }, stack.as(agent));
    expect(viaDispatch.status).toBe(CallStatus.SUCCESS);
    const res = await fetch(url("/run_tool"), {
      method: "POST",
      headers: { ...bearer(agent), "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "data.echo", params: { text: "same-b" } }),
    });
    expect(res.status).toBe(200);
    const out = (await res.json()) as Record<string, unknown>;
    expect(out).toMatchObject({ status: "CALL_STATUS_SUCCESS", output: { text: "same-b" } });
    expect(out.call_id).toEqual(expect.any(String));
    const a = await recordsOf(byText("same-a"));
    const b = await recordsOf(byText("same-b"));
    expect(b).toEqual({
      ...a,
      audit: { ...a.audit, arguments: { text: "same-b" } },
      outcome: { ...a.outcome, output: { text: "same-b" } },
    });
  });

  it("facade: errors are JSON with the RPC's code and details; refusals are recorded", async () => {
    const post = (body: string) =>
      fetch(url("/run_tool"), {
        method: "POST",
        headers: { ...bearer(agent), "content-type": "application/json" },
        body,
      });
    const bad = await post(
      JSON.stringify({ tool_id: "data.echo", params: { text: "", limit: 0 } }),
    );
    expect(bad.status).toBe(400);
    const error = (await bad.json()) as {
      code: string;
      message: string;
      details: { type: string; debug: unknown }[];
    };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("- /limit: must be >= 1");
    expect(error.details[0]?.type).toBe("toolmesh.common.v1.ValidationFailure");
    const unknown = await post(JSON.stringify({ tool_id: "data.nope", params: {} }));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toContain("data.echo");
    expect((await post("{not json")).status).toBe(400);
    expect((await post(JSON.stringify({ params: {} }))).status).toBe(400);
    const refused = await recordsOf((a) => a.tool === "data.nope");
    expect(refused.audit).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
    });
    const wrongMethod = await fetch(url("/run_tool"), { headers: bearer(agent) });
    expect(wrongMethod.status).toBe(405);
  });

  it("Dispatch and DispatchBatch accept exported names (data__query style)", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "data__echo", arguments: { text: "exported" } }, stack.as(agent));
    expect(res.status).toBe(CallStatus.SUCCESS);
    const records = await recordsOf(byText("exported"));
    expect(records.audit.tool).toBe("data.echo");
  });

  const replies = {
    openai: {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_a",
                type: "function",
                function: { name: "data__echo", arguments: '{"text":"oa-1"}' },
              },
              {
                id: "call_b",
                type: "function",
                function: { name: "mail__send", arguments: '{"to":"oa@x"}' },
              },
              {
                id: "call_c",
                type: "function",
                function: { name: "data__echo", arguments: '{"text": "oa-3",' },
              },
            ],
          },
        },
      ],
    },
    responses: {
      id: "resp_1",
      object: "response",
      output: [
        { type: "reasoning", id: "rs_1", summary: [] },
        {
          type: "function_call",
          id: "fc_1",
          call_id: "call_r1",
          name: "data__echo",
          arguments: '{"text":"rs-1"}',
        },
        {
          type: "function_call",
          id: "fc_2",
          call_id: "call_r2",
          name: "data__fail",
          arguments: "{}",
        },
        {
          type: "function_call",
          id: "fc_3",
          call_id: "call_r3",
          name: "data__echo",
          arguments: "[1,2]",
        },
      ],
    },
    anthropic: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      stop_reason: "tool_use",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "toolu_1", name: "data__echo", input: { text: "an-1" } },
        { type: "tool_use", id: "toolu_2", name: "mail__send", input: { to: "an@x" } },
        { type: "tool_use", id: "toolu_3", name: "data__echo", input: { text: "an-3", limit: 0 } },
      ],
    },
  };

  it("DispatchToolCalls: an OpenAI Chat reply round-trips into tool messages; bad JSON is a per-call error", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.openai as never }, stack.as(agent));
    expect(res.dialect).toBe(ToolCallDialect.OPENAI_CHAT);
    expect(res.messages).toEqual([
      { role: "tool", tool_call_id: "call_a", content: '{"text":"oa-1"}' },
      { role: "tool", tool_call_id: "call_b", content: '{"sent":"oa@x"}' },
      {
        role: "tool",
        tool_call_id: "call_c",
        content: expect.stringMatching(
          /^error \(INVALID_ARGUMENT\): arguments: are not valid JSON/,
        ),
      },
    ]);
    expect(res.results.map((r) => r.status)).toEqual([
      CallStatus.SUCCESS,
      CallStatus.SUCCESS,
      CallStatus.REFUSED,
    ]);
    expect(new Set(res.results.map((r) => r.traceId))).toEqual(new Set([res.traceId]));
    const garbled = await recordsOf((a) => a.callId === res.results[2]?.callId);
    expect(garbled.audit).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      tool: "data.echo",
      errorCode: "INVALID_ARGUMENT",
    });
    const viaReply = await recordsOf(byText("oa-1"));
    const viaDispatch = await recordsOf(byText("same-a"));
    expect(viaReply).toEqual({
      ...viaDispatch,
      audit: { ...viaDispatch.audit, arguments: { text: "oa-1" } },
      outcome: { ...viaDispatch.outcome, output: { text: "oa-1" } },
    });
  });

  it("DispatchToolCalls: an OpenAI Responses reply gives function_call_output items", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.responses as never }, stack.as(agent));
    expect(res.dialect).toBe(ToolCallDialect.OPENAI_RESPONSES);
    expect(res.messages).toEqual([
      { type: "function_call_output", call_id: "call_r1", output: '{"text":"rs-1"}' },
      {
        type: "function_call_output",
        call_id: "call_r2",
        output: expect.stringContaining("error ("),
      },
      {
        type: "function_call_output",
        call_id: "call_r3",
        output: expect.stringContaining("must be a JSON object"),
      },
    ]);
    expect(res.results[1]?.status).toBe(CallStatus.FAILURE);
  });

  it("DispatchToolCalls: an Anthropic reply gives one user message of tool_result blocks", async () => {
    const before = sideEffects.length;
    const res = await stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.anthropic as never }, stack.as(agent));
    expect(res.dialect).toBe(ToolCallDialect.ANTHROPIC);
    expect(res.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: '{"text":"an-1"}' },
          { type: "tool_result", tool_use_id: "toolu_2", content: '{"sent":"an@x"}' },
          {
            type: "tool_result",
            tool_use_id: "toolu_3",
            content: expect.stringContaining("- /limit: must be >= 1"),
            is_error: true,
          },
        ],
      },
    ]);
    expect(sideEffects.slice(before)).toEqual(["an@x"]);
    const appended = await runToolCalls(
      stack.dispatcherClient(),
      replies.anthropic,
      stack.as(agent),
    );
    expect(appended).toHaveLength(1);
    await expect(
      stack
        .dispatcherClient()
        .dispatchToolCalls({ message: { role: "assistant" } as never }, stack.as(agent)),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("MCP 2026-07-28: the official SDK client lists and calls tools through the chain", async () => {
    const client = new McpClient(
      { name: "surface-test", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url("/mcp")), {
        requestInit: { headers: bearer(agent) },
      }),
    );
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["data.echo", "data.fail", "mail.send"]);
    expect(tools[0]?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    expect(tools[2]?.annotations).toMatchObject({ readOnlyHint: false });
    const ok = await client.callTool({ name: "data.echo", arguments: { text: "mcp-new" } });
    expect(ok.structuredContent).toEqual({ text: "mcp-new" });
    expect(ok.content).toEqual([{ type: "text", text: '{"text":"mcp-new"}' }]);
    const bad = await client.callTool({ name: "data.echo", arguments: { text: "x", limit: 0 } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain("- /limit: must be >= 1");
    const failed = await client.callTool({ name: "data.fail", arguments: {} });
    expect(failed.isError).toBe(true);
    await client.close();
    const viaMcp = await recordsOf(byText("mcp-new"));
    const viaDispatch = await recordsOf(byText("same-a"));
    expect(viaMcp).toEqual({
      ...viaDispatch,
      audit: { ...viaDispatch.audit, arguments: { text: "mcp-new" } },
      outcome: { ...viaDispatch.outcome, output: { text: "mcp-new" } },
    });
  });

  it("MCP 2025-11-25: the @modelcontextprotocol/sdk client initializes, lists and calls", async () => {
    const client = new LegacyMcpClient({ name: "surface-legacy", version: "1.0.0" });
    await client.connect(
      new LegacyTransport(new URL(url("/mcp")), { requestInit: { headers: bearer(agent) } }),
    );
    expect(client.getServerVersion()?.name).toBe("toolmesh");
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(3);
    const ok = await client.callTool({ name: "data.echo", arguments: { text: "mcp-old" } });
    expect(ok.structuredContent).toEqual({ text: "mcp-old" });
    await client.close();
    expect((await recordsOf(byText("mcp-old"))).audit.action).toBe(AuditAction.TOOL_CALL);
  });

  it("MCP: 401 with resource_metadata without a token, 403 on a foreign Origin, RFC 9728 metadata", async () => {
    const init = {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    };
    const anonymous = await fetch(url("/mcp"), init);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain(
      `resource_metadata="${url("/.well-known/oauth-protected-resource/mcp")}"`,
    );
    const foreign = await fetch(url("/mcp"), {
      ...init,
      headers: { ...init.headers, ...bearer(agent), origin: "https://evil.example" },
    });
    expect(foreign.status).toBe(403);
    const metadata = await fetch(url("/.well-known/oauth-protected-resource/mcp"));
    expect(await metadata.json()).toMatchObject({
      resource: url("/mcp"),
      bearer_methods_supported: ["header"],
    });
  });

  // Last in this file: it adds a tool and removes it again.
  it("MCP 2026-07-28: a tool registered or removed reaches a listening client as tools/list_changed", async () => {
    const lists = new Collector<string[]>();
    const client = new McpClient(
      { name: "surface-listener", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (!error && tools) lists.push(tools.map((t) => t.name));
            },
          },
        },
      },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url("/mcp")), {
        requestInit: { headers: bearer(agent) },
      }),
    );
    const added = defineTool({
      name: "data.added",
      description: "Registered while a client listens.",
      inputSchema: { type: "object" },
      handler: () => ({}),
    });
    // The listen stream opens with the connection; a change before it is open would be missed,
    // so the tool is registered again until the client has heard of it.
    await eventually(async () => {
      await registerTools([added], served.address, {
        url: stack.registry.url,
        token: stack.adminToken,
      });
      await lists.waitFor((names) => names.includes("data.added"), 1, 2_000);
    }, 30_000);
    await stack.registryClient.deregisterTool({ name: "data.added" }, stack.as(stack.adminToken));
    await lists.waitFor((names) => !names.includes("data.added") && names.includes("data.echo"));
    await client.close();
  });
});
