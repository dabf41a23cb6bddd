import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { ApprovalDecision, ApprovalState } from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  echoTool,
  eventually,
  payTool,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** How long a call waits for its approver in this stack. */
const HOLD_MS = 120_000;
const RELATED_TASK = "io.modelcontextprotocol/related-task";
/** -32602 Invalid params, the spec's answer for a task id the caller may not see. */
const notFound = /^MCP error -32602: task not found: /;

// A call held for approval, over MCP 2025-11-25 with task augmentation, against real processes:
// the official SDK client gets a task, polls it while an approver decides through
// DecideApproval, and reads the result tools/call would have answered; tasks/list lists the
// caller's tasks and tasks/cancel withdraws a held one. Tasks are the caller's own: another
// agent's task id is "not found". (The 2026-07-28 Tasks extension: mcp-tasks-ext.test.ts.)
describe("MCP tasks for held calls", () => {
  let stack: TestStack;
  let served: ServedTools;
  const ran: string[] = [];
  const tokens: Record<string, string> = {};
  const clients: LegacyMcpClient[] = [];

  /** A 2025-11-25 client of the official SDK, as one agent, of one Dispatcher replica. */
  const connect = async (agent: string, replica = "dispatcher") => {
    const client = new LegacyMcpClient({ name: `tasks-${agent}`, version: "1.0.0" });
    await client.connect(
      new LegacyTransport(new URL(`${stack.service(replica).url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens[agent]}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  const decide = (callId: string, decision: ApprovalDecision, reason = "") =>
    stack
      .dispatcherClient()
      .decideApproval({ callId, decision, reason }, stack.as(tokens.boss ?? ""));
  const heldIds = async () =>
    (await stack.dispatcherClient().listApprovals({}, stack.as(tokens.boss ?? ""))).approvals.map(
      (a) => a.callId,
    );
  /** Starts a task-augmented call of pay.send; the SDK checks the answer is a CreateTaskResult. */
  const payAsTask = (client: LegacyMcpClient, invoice: string) =>
    client.request(
      {
        method: "tools/call",
        params: { name: "pay.send", arguments: { invoice }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );

  beforeAll(async () => {
    // Two Dispatchers: a task created through one is answered by the other (no state in memory).
    stack = await startStack({
      replicas: { dispatcher: 2 },
      serviceEnv: { dispatcher: { TOOLMESH_APPROVAL_TIMEOUT_MS: String(HOLD_MS) } },
    });
    served = await serveOnStack(stack, [payTool(ran), echoTool("data.echo")], {
      requiresApproval: ["pay.send"],
    });
    for (const agent of ["payer", "other"]) {
      tokens[agent] = await stack.agentToken(agent);
      await stack.grantAll(agent);
    }
    // TOOLMESH_APPROVER_ROLES defaults to `approver`.
    tokens.boss = await stack.agentToken("boss", { roles: ["agent", "approver"] });
    await eventually(() =>
      stack
        .dispatcherClient()
        .dispatch(
          { tool: "data.echo", arguments: { text: "ready" } },
          stack.as(tokens.payer ?? ""),
        ),
    );
  }, 120_000);

  afterAll(async () => {
    for (const client of clients) await client.close();
    await served?.close();
    await stack?.stop();
  });

  it("declares task support, and lists the tools that wait for an approver as task-capable", async () => {
    const client = await connect("payer");
    expect(client.getServerCapabilities()?.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName["pay.send"]?.execution).toEqual({ taskSupport: "optional" });
    expect(byName["data.echo"]?.execution).toBeUndefined();
  });

  it("a held call becomes a task: working until approved, then completed with the tool's result", async () => {
    const client = await connect("payer");
    await client.listTools();
    const seen: string[] = [];
    let taskId = "";
    let result: unknown;
    let decided = false;
    const stream = client.experimental.tasks.callToolStream(
      { name: "pay.send", arguments: { invoice: "inv-approved" } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    );
    for await (const message of stream) {
      if (message.type === "taskCreated") {
        taskId = message.task.taskId;
        expect(message.task.status).toBe("working");
        expect(message.task.statusMessage).toMatch(/^awaiting approval: call tm-/);
        expect(message.task.statusMessage).toContain("approval_expired");
      } else if (message.type === "taskStatus") {
        seen.push(message.task.status);
        // The approver decides once the client has seen the task waiting.
        if (message.task.status === "working" && !decided) {
          expect(ran).not.toContain("inv-approved");
          decided = true;
          await decide(taskId, ApprovalDecision.APPROVE, "invoice checked");
        }
      } else if (message.type === "result") result = message.result;
      else throw message.error;
    }
    expect(seen[0]).toBe("working");
    expect(seen.at(-1)).toBe("completed");
    expect(ran).toEqual(["inv-approved"]);
    expect(result).toMatchObject({
      content: [{ type: "text", text: '{"paid":"inv-approved"}' }],
      structuredContent: { paid: "inv-approved" },
      _meta: { [RELATED_TASK]: { taskId } },
    });
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ taskId, status: "completed" });
    expect(Date.parse(task.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(task.createdAt));

    // Another agent sees no such task, for every task method.
    const other = await connect("other");
    await expect(other.experimental.tasks.getTask(taskId)).rejects.toThrow(notFound);
    await expect(
      other.experimental.tasks.getTaskResult(taskId, CallToolResultSchema),
    ).rejects.toThrow(notFound);
  });

  it("tasks/result waits for the decision, on another replica; a denied call ends failed with approval_denied", async () => {
    const client = await connect("payer");
    const { task } = await payAsTask(client, "inv-denied");
    expect(task.pollInterval).toBeGreaterThanOrEqual(1000);
    expect(Date.parse(task.createdAt)).not.toBeNaN();
    expect(await client.experimental.tasks.getTask(task.taskId)).toMatchObject({
      status: "working",
    });
    const elsewhere = await connect("payer", "dispatcher-2");
    const waiting = elsewhere.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    // tasks/result blocks until the call ends: it is still held, so it ends with the decision.
    await decide(task.taskId, ApprovalDecision.DENY, "not this month");
    const result = await waiting;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      {
        type: "text",
        text: expect.stringMatching(
          /^approval_denied: call tm-\S+ to tool "pay\.send" was denied by boss: not this month/,
        ),
      },
    ]);
    expect(result._meta?.[RELATED_TASK]).toEqual({ taskId: task.taskId });
    const ended = await client.experimental.tasks.getTask(task.taskId);
    expect(ended.status).toBe("failed");
    expect(ended.statusMessage).toMatch(/^approval_denied: /);
    expect(ran).not.toContain("inv-denied");
  });

  it("without task augmentation a held call is still a text result; a tool that needs no approval refuses a task", async () => {
    const client = await connect("payer");
    const held = await client.callTool({ name: "pay.send", arguments: { invoice: "inv-text" } });
    // pay.send has an output schema: a result without structuredContent is marked isError.
    expect(held.isError).toBe(true);
    expect(held.content).toEqual([
      { type: "text", text: expect.stringMatching(/^awaiting approval \(call_id tm-\S+\): /) },
    ]);
    await expect(
      client.request(
        {
          method: "tools/call",
          params: { name: "data.echo", arguments: { text: "x" }, task: {} },
        },
        CreateTaskResultSchema,
      ),
    ).rejects.toMatchObject({
      code: -32601,
      message: expect.stringContaining('call it without "task"'),
    });
    await expect(client.experimental.tasks.getTask("tm-no-such-call")).rejects.toThrow(notFound);
    // Hostile ids: wildcards match no one's call, an oversized id is not looked up at all.
    for (const hostile of ["*", ">", "tm-a.>", "x".repeat(100_000)]) {
      await expect(client.experimental.tasks.getTask(hostile)).rejects.toThrow(notFound);
    }

    // 2026-07-28 moved tasks to an extension (mcp-tasks-ext.test.ts): a client that does not
    // declare it gets the text.
    const modern = new McpClient(
      { name: "tasks-modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await modern.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens.payer}` } },
      }),
    );
    // Listed first: the SDK client then checks pay.send's results against its output schema,
    // and accepts the held call's text because it is marked isError.
    const { tools } = await modern.listTools();
    expect(tools.find((t) => t.name === "pay.send")?.execution).toBeUndefined();
    const text = await modern.callTool({ name: "pay.send", arguments: { invoice: "inv-modern" } });
    expect(text.isError).toBe(true);
    expect(JSON.stringify(text.content)).toContain("awaiting approval (call_id tm-");
    await modern.close();
    const pending = await stack
      .dispatcherClient()
      .listApprovals({ tool: "pay.send" }, stack.as(tokens.boss ?? ""));
    expect(pending.approvals.map((a) => a.arguments?.invoice).sort()).toEqual([
      "inv-modern",
      "inv-text",
    ]);
    expect(pending.approvals.every((a) => a.state === ApprovalState.PENDING)).toBe(true);
  });

  it("2025-11-25: tasks/list shows the caller's own tasks, ended ones too; tasks/cancel withdraws a held call", async () => {
    const client = await connect("payer");
    const kept = (await payAsTask(client, "list-kept")).task.taskId;
    const dropped = (await payAsTask(client, "list-dropped")).task.taskId;
    await decide(kept, ApprovalDecision.APPROVE);
    const cancelled = await client.experimental.tasks.cancelTask(dropped);
    expect(cancelled).toMatchObject({ taskId: dropped });
    expect(await heldIds()).not.toContain(dropped);

    // Listed through the other replica, newest first, with their ends.
    const elsewhere = await connect("payer", "dispatcher-2");
    const listed = await eventually(async () => {
      const { tasks } = await elsewhere.experimental.tasks.listTasks();
      const byId = Object.fromEntries(tasks.map((t) => [t.taskId, t.status]));
      expect(byId).toMatchObject({ [kept]: "completed", [dropped]: "cancelled" });
      return tasks;
    });
    const ids = listed.map((t) => t.taskId);
    expect(ids.indexOf(dropped)).toBeLessThan(ids.indexOf(kept));
    expect(ran).toContain("list-kept");
    expect(ran).not.toContain("list-dropped");

    // Another agent lists none of them, and cannot cancel them.
    const other = await connect("other");
    const { tasks: theirs } = await other.experimental.tasks.listTasks();
    expect(theirs.map((t) => t.taskId)).not.toContain(kept);
    await expect(other.experimental.tasks.cancelTask(kept)).rejects.toThrow(notFound);
  });
});
