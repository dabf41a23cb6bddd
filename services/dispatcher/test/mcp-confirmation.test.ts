import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Code } from "@toolmesh/errors";
import { ApprovalDecision, AuditAction, CallStatus } from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import { defineTool, type ServedTools } from "@toolmesh/sdk";
import {
  allowSpec,
  type CallRecords,
  collectRecords,
  eventually,
  failure,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** How long a call waits for its caller's confirmation in this stack. */
const HOLD_MS = 4000;

type InputRequired = {
  resultType: string;
  inputRequests: Record<string, { method: string; params: { message: string } }>;
  requestState: string;
};

// A tool (or grant) that requires the calling user's confirmation, against real processes: over
// MCP the caller's own client is asked (an elicitation on 2025-11-25, an input-required result on
// 2026-07-28) naming the tool and its redacted arguments, and the answer confirms or denies that
// call alone, once; over gRPC the call is held and its caller decides it with DecideApproval.
describe("confirmation by the calling user", () => {
  let stack: TestStack;
  let served: ServedTools;
  let records: CallRecords;
  const deleted: string[] = [];
  const tokens: Record<string, string> = {};
  const clients: { close(): Promise<void> }[] = [];

  const legacy = async (answer: (message: string) => object) => {
    const client = new LegacyMcpClient(
      { name: "confirm-legacy", version: "1.0.0" },
      { capabilities: { elicitation: {} } },
    );
    client.setRequestHandler(
      ElicitRequestSchema,
      async (request) => answer(request.params.message) as never,
    );
    await client.connect(
      new LegacyTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens.user}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  const modern = async (options: { autoFulfill: boolean }, answer?: () => object) => {
    const client = new McpClient(
      { name: "confirm-modern", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        capabilities: { elicitation: { form: {} } },
        inputRequired: { autoFulfill: options.autoFulfill },
      },
    );
    if (answer) client.setRequestHandler("elicitation/create", async () => answer() as never);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens.user}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  /**
   * The actions of a call's records once it ended, in order; a start Audit chained with its end
   * (a call that ended within a second) reads as its own TOOL_START, as two records would.
   */
  const actionsOf = async (callId: string) => {
    await records.audits.waitFor((a) => a.callId === callId && endsCall(a));
    return records.audits.items
      .filter((a) => a.callId === callId)
      .flatMap((a) => [
        ...(a.action !== AuditAction.TOOL_START && startsCall(a) ? ["TOOL_START UNSPECIFIED"] : []),
        `${AuditAction[a.action]} ${CallStatus[a.status]}`,
      ]);
  };
  const callIdOf = async (path: string) =>
    (
      await records.audits.waitFor(
        (a) => a.action === AuditAction.APPROVAL_REQUESTED && a.arguments?.path === path,
      )
    )[0]?.callId ?? "";

  beforeAll(async () => {
    stack = await startStack({
      serviceEnv: {
        dispatcher: {
          TOOLMESH_APPROVAL_TIMEOUT_MS: String(HOLD_MS),
          TOOLMESH_SWEEP_INTERVAL_MS: "250",
        },
      },
    });
    records = collectRecords(stack.nc);
    const remove = defineTool({
      name: "files.delete",
      description: "Deletes a file; its caller confirms each call.",
      sideEffects: true,
      inputSchema: {
        type: "object",
        properties: { path: { type: "string" }, token: { type: "string" } },
        required: ["path"],
      },
      handler: (args: { path: string }) => {
        deleted.push(args.path);
        return { deleted: args.path };
      },
    });
    const archive = defineTool({
      name: "files.archive",
      description: "Archives a file; confirmed only where a grant says so.",
      inputSchema: { type: "object", properties: { path: { type: "string" } } },
      handler: (args: { path: string }) => ({ archived: args.path }),
    });
    served = await serveOnStack(stack, [remove, archive], {
      requiresConfirmation: ["files.delete"],
    });
    tokens.user = await stack.agentToken("assistant", { onBehalfOf: "alice" });
    tokens.other = await stack.agentToken("other-agent");
    const admin = stack.as(stack.adminToken);
    for (const who of ["agent:assistant", "user:alice", "agent:other-agent"])
      await stack.permissionClient.grant(
        { grant: allowSpec(who, "tool:files.delete", ["*"]) },
        admin,
      );
    // files.archive: the assistant's grant asks for confirmation, alice's does not.
    await stack.permissionClient.grant(
      {
        grant: {
          ...allowSpec("agent:assistant", "tool:files.archive", ["*"]),
          requiresConfirmation: true,
        },
      },
      admin,
    );
    await stack.permissionClient.grant(
      { grant: allowSpec("user:alice", "tool:files.archive", ["*"]) },
      admin,
    );
    await eventually(async () => {
      const { tools } = await stack.registryClient.listTools(
        { keyword: "files." },
        stack.as(stack.adminToken),
      );
      if (tools.length < 2) throw new Error("tools not registered yet");
    });
  });

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await served?.close();
    await stack?.stop();
  });

  it("2025-11-25: the user is asked on the call's stream, naming the tool and the redacted arguments; yes runs it", async () => {
    const messages: string[] = [];
    const client = await legacy((message) => {
      messages.push(message);
      return { action: "accept", content: { confirm: true } };
    });
    const result = await client.callTool({
      name: "files.delete",
      arguments: { path: "legacy.txt", token: "tok-secret" },
    });
    expect(result.isError).toBeFalsy();
    expect(deleted).toContain("legacy.txt");
    expect(messages[0]).toContain('"files.delete"');
    expect(messages[0]).toContain('"path": "legacy.txt"');
    expect(messages[0]).not.toContain("tok-secret");
    expect(await actionsOf(await callIdOf("legacy.txt"))).toEqual([
      "APPROVAL_REQUESTED PENDING",
      "APPROVAL_DECIDED PENDING",
      "TOOL_START UNSPECIFIED",
      "TOOL_CALL SUCCESS",
    ]);
  });

  it("2026-07-28: the question is an input-required result; no denies the call with approval_denied", async () => {
    const client = await modern({ autoFulfill: true }, () => ({ action: "decline" }));
    const result = await client.callTool({ name: "files.delete", arguments: { path: "no.txt" } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("approval_denied");
    expect(deleted).not.toContain("no.txt");
    expect(await actionsOf(await callIdOf("no.txt"))).toEqual([
      "APPROVAL_REQUESTED PENDING",
      "APPROVAL_DECIDED REFUSED",
      "TOOL_CALL REFUSED",
    ]);
  });

  it("2026-07-28: the answer is bound to its call and used once; a changed state is refused", async () => {
    const client = await modern({ autoFulfill: false });
    const call = { name: "files.delete", arguments: { path: "bound.txt" } };
    const asked = (await client.request({ method: "tools/call", params: call }, {
      allowInputRequired: true,
    } as never)) as unknown as InputRequired;
    expect(asked.resultType).toBe("input_required");
    expect(asked.inputRequests.confirm?.method).toBe("elicitation/create");
    const yes = { confirm: { action: "accept", content: { confirm: true } } };
    const retry = (requestState: string) =>
      client.request(
        { method: "tools/call", params: { ...call, inputResponses: yes, requestState } },
        { allowInputRequired: true } as never,
      );
    await expect(retry(`${asked.requestState}x`)).rejects.toMatchObject({ code: -32602 });
    const done = (await retry(asked.requestState)) as unknown as { structuredContent: unknown };
    expect(done.structuredContent).toEqual({ deleted: "bound.txt" });
    await expect(retry(asked.requestState)).rejects.toMatchObject({ code: -32602 });
    expect(deleted.filter((p) => p === "bound.txt")).toHaveLength(1);
  });

  it("a confirmation nobody gives expires: approval_expired, and a late answer is refused", async () => {
    const client = await modern({ autoFulfill: false });
    const call = { name: "files.delete", arguments: { path: "late.txt" } };
    const asked = (await client.request({ method: "tools/call", params: call }, {
      allowInputRequired: true,
    } as never)) as unknown as InputRequired;
    const callId = await callIdOf("late.txt");
    const [end] = await records.audits.waitFor(
      (a) => a.callId === callId && a.action === AuditAction.TOOL_CALL,
      1,
      HOLD_MS + 10_000,
    );
    expect(end).toMatchObject({ status: CallStatus.REFUSED, errorCode: "approval_expired" });
    const late = client.request(
      {
        method: "tools/call",
        params: {
          ...call,
          inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
          requestState: asked.requestState,
        },
      },
      { allowInputRequired: true } as never,
    );
    await expect(late).rejects.toMatchObject({ code: -32602 });
    expect(deleted).not.toContain("late.txt");
  });

  it("gRPC: the call is held for its caller, who alone decides it with DecideApproval", async () => {
    const dispatcher = stack.dispatcherClient();
    const held = await dispatcher.dispatch(
      { tool: "files.delete", arguments: { path: "grpc.txt" } },
      stack.as(tokens.user ?? ""),
    );
    expect(held).toMatchObject({
      status: CallStatus.PENDING,
      error: { code: "awaiting_approval" },
    });
    expect(held.error?.message).toContain("needs the confirmation of its caller");
    const stranger = await failure(
      dispatcher.decideApproval(
        { callId: held.callId, decision: ApprovalDecision.APPROVE },
        stack.as(stack.adminToken),
      ),
    );
    expect(stranger.code).toBe(Code.PermissionDenied);
    const decided = await dispatcher.decideApproval(
      { callId: held.callId, decision: ApprovalDecision.APPROVE },
      stack.as(tokens.user ?? ""),
    );
    expect(decided.result).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { deleted: "grpc.txt" },
    });
  });

  it("a grant may require it: the agent's grant asks, a call allowed outright does not", async () => {
    const dispatcher = stack.dispatcherClient();
    const viaAssistant = await dispatcher.dispatch(
      { tool: "files.archive", arguments: { path: "a.txt" } },
      stack.as(tokens.user ?? ""),
    );
    expect(viaAssistant.status).toBe(CallStatus.PENDING);
    expect(viaAssistant.error?.message).toContain("required by grant:");
    const other = await stack.agentToken("archiver");
    await stack.permissionClient.grant(
      { grant: allowSpec("agent:archiver", "tool:files.archive", ["*"]) },
      stack.as(stack.adminToken),
    );
    const outright = await eventually(() =>
      dispatcher.dispatch({ tool: "files.archive", arguments: { path: "b.txt" } }, stack.as(other)),
    );
    expect(outright.status).toBe(CallStatus.SUCCESS);
  });
});
