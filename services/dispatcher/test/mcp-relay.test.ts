import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { Code } from "@toolmesh/errors";
import { AuditAction, CallStatus, McpOperation, TraceEventKind } from "@toolmesh/proto";
import {
  type CallRecords,
  collectRecords,
  type EverythingStack,
  failure,
  startEverythingStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ANSWER = { name: "Ada Lovelace", email: "ada@example.org", password: "s3cret-answer" };
const SAMPLED = {
  model: "test-model",
  role: "assistant",
  content: { type: "text", text: "Paris, of course" },
};

// A tool of an imported MCP server (server-everything, over streamable HTTP and over stdio) asks
// its client for input mid-call: toolmesh relays the question to the agent's own MCP client
// (2026-07-28: an input-required result and a retry; 2025-11-25: a request on the call's stream)
// or to a gRPC caller (PENDING with input_required, then AnswerInput), and the answer back. Each
// question and answer is a trace event and part of the call's end record, redacted.
describe("MCP elicitation and sampling, relayed", () => {
  let everything: EverythingStack;
  let stack: TestStack;
  let records: CallRecords;
  let token: string;
  const clients: { close(): Promise<void> }[] = [];

  /** The official 2026-07-28 client, answering elicitation and sampling as a host would. */
  const modern = async () => {
    const client = new McpClient(
      { name: "relay-modern", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        capabilities: { elicitation: { form: {} }, sampling: {} },
      },
    );
    client.setRequestHandler("elicitation/create", async (request) => {
      expect(request.params.message).toContain("Please provide inputs");
      return { action: "accept", content: ANSWER };
    });
    client.setRequestHandler("sampling/createMessage", async () => SAMPLED as never);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  /** The 2025-11-25 client of @modelcontextprotocol/sdk, answering on the call's stream. */
  const legacy = async () => {
    const client = new LegacyMcpClient(
      { name: "relay-legacy", version: "1.0.0" },
      { capabilities: { elicitation: {}, sampling: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: "accept",
      content: ANSWER,
    }));
    client.setRequestHandler(CreateMessageRequestSchema, async () => SAMPLED as never);
    await client.connect(
      new LegacyTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  /** The events of a call's end record, and the kinds of its trace. */
  const recordedInputs = async (callId: string) => {
    const [end] = await records.audits.waitFor(
      (a) => a.callId === callId && a.action === AuditAction.TOOL_CALL,
    );
    return end?.events.filter(
      (e) => e.kind === TraceEventKind.INPUT_REQUESTED || e.kind === TraceEventKind.INPUT_ANSWERED,
    );
  };
  const callIdOf = async (tool: string) =>
    (await records.audits.waitFor((a) => a.tool === tool && a.action === AuditAction.TOOL_CALL))
      .map((a) => a.callId)
      .at(-1) ?? "";

  beforeAll(async () => {
    // Two Dispatchers: an answer may reach either, and goes to the one running the call.
    everything = await startEverythingStack({ replicas: { dispatcher: 2 } });
    stack = everything.stack;
    records = collectRecords(stack.nc);
    token = await stack.agentToken("relay-agent");
    await stack.grantAll("relay-agent");
    const admin = stack.as(stack.adminToken);
    await stack.dispatcherClient().importMcpServer(
      {
        prefix: "http",
        runtime: { url: everything.url },
        only: [McpOperation.TOOL],
      },
      admin,
    );
    await stack.dispatcherClient().importMcpServer(
      {
        prefix: "stdio",
        runtime: everything.stdio,
        only: [McpOperation.TOOL],
      },
      admin,
    );
  });

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await everything?.stop();
  });

  for (const via of ["http", "stdio"]) {
    it(`2026-07-28 client: an elicitation of a server imported over ${via} is asked and answered`, async () => {
      const client = await modern();
      const tool = `${via}.trigger-elicitation-request`;
      const result = await client.callTool({ name: tool, arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain("Ada Lovelace");
      const callId = await callIdOf(tool);
      const inputs = await recordedInputs(callId);
      expect(inputs?.map((e) => TraceEventKind[e.kind])).toEqual([
        "INPUT_REQUESTED",
        "INPUT_ANSWERED",
      ]);
      expect(inputs?.[0]?.payload).toMatchObject({ method: "elicitation/create" });
      // The answer is redacted as arguments are: the password never reaches a record.
      expect(inputs?.[1]?.payload?.result).toMatchObject({
        action: "accept",
        content: { name: "Ada Lovelace", password: "[redacted]" },
      });
      // The call's trace shows them between its start and its result.
      const trace = await records.traces.waitFor(
        (e) => e.callId === callId && e.kind === TraceEventKind.CALLBACK_SUCCESS,
      );
      expect(trace).toHaveLength(1);
      const kinds = records.traces.items
        .filter((e) => e.callId === callId)
        .map((e) => TraceEventKind[e.kind]);
      expect(kinds).toEqual([
        "TOOL_EXECUTE",
        "INPUT_REQUESTED",
        "INPUT_ANSWERED",
        "TOOL_RESULT",
        "CALLBACK_SUCCESS",
      ]);
    });

    it(`2025-11-25 client: a sampling request of a server imported over ${via} is asked on the call's stream`, async () => {
      const client = await legacy();
      const tool = `${via}.trigger-sampling-request`;
      const result = await client.callTool({
        name: tool,
        arguments: { prompt: "capital of France?", maxTokens: 20 },
      });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain("Paris, of course");
      const inputs = await recordedInputs(await callIdOf(tool));
      expect(inputs?.[0]?.payload).toMatchObject({ method: "sampling/createMessage" });
      expect(inputs?.[1]?.payload?.result).toMatchObject({ model: "test-model" });
    });
  }

  it("gRPC: the call is PENDING with input_required, and AnswerInput answers it", async () => {
    const dispatcher = stack.dispatcherClient();
    const first = await dispatcher.dispatch(
      { tool: "http.trigger-sampling-request", arguments: { prompt: "grpc?", maxTokens: 5 } },
      stack.as(token),
    );
    expect(first).toMatchObject({
      status: CallStatus.PENDING,
      error: { code: "input_required" },
    });
    const asked = first.inputRequired;
    const [key, request] = Object.entries(asked?.requests ?? {})[0] ?? [];
    expect(request?.method).toBe("sampling/createMessage");
    const state = asked?.requestState ?? "";
    // Tampered with, or another caller's: refused, and the call still waits.
    const tampered = `${state.slice(0, -4)}AAAA`;
    expect(
      await failure(
        dispatcher.answerInput({ requestState: tampered, responses: {} }, stack.as(token)),
      ),
    ).toMatchObject({ code: Code.InvalidArgument });
    const other = await stack.agentToken("relay-other");
    expect(
      await failure(
        dispatcher.answerInput({ requestState: state, responses: {} }, stack.as(other)),
      ),
    ).toMatchObject({ code: Code.InvalidArgument });
    const answered = await dispatcher.answerInput(
      { requestState: state, responses: { [key ?? ""]: SAMPLED } },
      stack.as(token),
    );
    expect(answered.result).toMatchObject({ callId: first.callId, status: CallStatus.SUCCESS });
    expect(JSON.stringify(answered.result?.output)).toContain("Paris, of course");
    // Used once: the same state again names a call that no longer waits.
    expect(
      await failure(
        dispatcher.answerInput({ requestState: state, responses: {} }, stack.as(token)),
      ),
    ).toMatchObject({ code: Code.NotFound });
    const events = await records.traces.waitFor(
      (e) => e.callId === first.callId && e.kind === TraceEventKind.INPUT_ANSWERED,
    );
    expect(events[0]?.payload).toMatchObject({ key });
  });

  it("2026-07-28: a tampered requestState is refused with -32602, and the call's own state still works", async () => {
    const client = new McpClient(
      { name: "relay-manual", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        capabilities: { elicitation: { form: {} } },
        inputRequired: { autoFulfill: false },
      },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    const call = { name: "http.trigger-elicitation-request", arguments: {} };
    const asked = (await client.request({ method: "tools/call", params: call }, {
      allowInputRequired: true,
    } as never)) as unknown as {
      resultType: string;
      inputRequests: Record<string, { method: string }>;
      requestState: string;
    };
    expect(asked.resultType).toBe("input_required");
    const [key] = Object.keys(asked.inputRequests);
    const answer = { [key ?? ""]: { action: "accept", content: ANSWER } };
    const tampered = client.request(
      {
        method: "tools/call",
        params: { ...call, inputResponses: answer, requestState: `${asked.requestState}x` },
      },
      { allowInputRequired: true } as never,
    );
    await expect(tampered).rejects.toMatchObject({ code: -32602 });
    const done = (await client.request(
      {
        method: "tools/call",
        params: { ...call, inputResponses: answer, requestState: asked.requestState },
      },
      { allowInputRequired: true } as never,
    )) as unknown as { content: unknown };
    expect(JSON.stringify(done.content)).toContain("Ada Lovelace");
  });

  it("an answer sent to another replica reaches the call where it runs: a 2026-07-28 retry, and AnswerInput", async () => {
    const elsewhere = (replica: string) => {
      const client = new McpClient(
        { name: `relay-${replica}`, version: "1.0.0" },
        {
          versionNegotiation: { mode: { pin: "2026-07-28" } },
          capabilities: { elicitation: { form: {} } },
          inputRequired: { autoFulfill: false },
        },
      );
      clients.push(client);
      return client
        .connect(
          new StreamableHTTPClientTransport(new URL(`${stack.service(replica).url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${token}` } },
          }),
        )
        .then(() => client);
    };
    const [first, second] = [await elsewhere("dispatcher"), await elsewhere("dispatcher-2")];
    const call = { name: "http.trigger-elicitation-request", arguments: {} };
    const asked = (await first.request({ method: "tools/call", params: call }, {
      allowInputRequired: true,
    } as never)) as unknown as { inputRequests: Record<string, unknown>; requestState: string };
    const [key] = Object.keys(asked.inputRequests);
    const done = (await second.request(
      {
        method: "tools/call",
        params: {
          ...call,
          inputResponses: { [key ?? ""]: { action: "accept", content: ANSWER } },
          requestState: asked.requestState,
        },
      },
      { allowInputRequired: true } as never,
    )) as unknown as { content: unknown };
    expect(JSON.stringify(done.content)).toContain("Ada Lovelace");

    // gRPC: asked through one replica, answered through the other.
    const pending = await stack
      .dispatcherClient()
      .dispatch(
        { tool: "http.trigger-sampling-request", arguments: { prompt: "far?", maxTokens: 5 } },
        stack.as(token),
      );
    const state = pending.inputRequired?.requestState ?? "";
    const [sampleKey] = Object.keys(pending.inputRequired?.requests ?? {});
    const other = stack.dispatcherClient(
      createGrpcTransport({ baseUrl: stack.service("dispatcher-2").url }),
    );
    const answered = await other.answerInput(
      { requestState: state, responses: { [sampleKey ?? ""]: SAMPLED } },
      stack.as(token),
    );
    expect(answered.result).toMatchObject({ callId: pending.callId, status: CallStatus.SUCCESS });
    expect(JSON.stringify(answered.result?.output)).toContain("Paris, of course");
  });

  it("2025-11-25: an answer POSTed to another replica reaches the call's stream where it runs", async () => {
    const far = new URL(`${stack.service("dispatcher-2").url}/mcp`);
    const answersSent: string[] = [];
    const client = new LegacyMcpClient(
      { name: "relay-split", version: "1.0.0" },
      { capabilities: { sampling: {} } },
    );
    client.setRequestHandler(CreateMessageRequestSchema, async () => SAMPLED as never);
    await client.connect(
      new LegacyTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
        // A load balancer's choice: the client's answers (JSON-RPC responses) go to the other
        // replica, its requests to the first.
        fetch: (url, init) => {
          const body = typeof init?.body === "string" ? init.body : "";
          const answer =
            init?.method === "POST" && body.includes('"result"') && !body.includes('"method"');
          if (answer) answersSent.push(body);
          return fetch(answer ? far : url, init);
        },
      }),
    );
    clients.push(client);
    const result = await client.callTool({
      name: "http.trigger-sampling-request",
      arguments: { prompt: "split?", maxTokens: 5 },
    });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain("Paris, of course");
    expect(answersSent).toHaveLength(1);
  });
});
