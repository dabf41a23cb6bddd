import type { JsonObject } from "@bufbuild/protobuf";
import { ApprovalDecision, TaskSupport } from "@toolmesh/proto";
import { defineTool, type ServedTools } from "@toolmesh/sdk";
import {
  echoTool,
  eventually,
  payTool,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const TASKS = "io.modelcontextprotocol/tasks";
const MODERN = "2026-07-28";

/** A JSON-RPC answer: its result, or its error. */
interface Answer {
  result?: JsonObject;
  error?: { code: number; message: string };
}

// The 2026-07-28 Tasks extension against real processes and two Dispatcher replicas: a held
// call's, a confirmed call's or a long call's tools/call answers a task; tasks/get, tasks/update
// and tasks/cancel. A task is its call: any replica answers for it from the call's hold and
// records, and a cancel withdraws a held call or interrupts a running one where it runs.
// (2025-11-25 tasks: mcp-tasks.test.ts.)
describe("MCP tasks, 2026-07-28 extension", () => {
  let stack: TestStack;
  let served: ServedTools;
  const ran: string[] = [];
  const deleted: string[] = [];
  /** How each call of jobs.slow ended: "aborted" when the Dispatcher gave it up. */
  const slowEnds: string[] = [];
  const tokens: Record<string, string> = {};
  let nextId = 1;

  /**
   * One 2026-07-28 request as the suite's raw client sends it: the envelope in `_meta`, the
   * routing headers, and the Tasks extension declared unless `extension` is false.
   */
  const modern = async (
    method: string,
    params: JsonObject,
    options: { agent?: string; replica?: string; extension?: boolean } = {},
  ): Promise<Answer> => {
    const id = nextId++;
    const name = typeof params.name === "string" ? params.name : params.taskId;
    const response = await fetch(`${stack.service(options.replica ?? "dispatcher").url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${tokens[options.agent ?? "payer"]}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        ...(typeof name === "string" ? { "mcp-name": name } : {}),
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method,
        params: {
          ...params,
          _meta: {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": { name: "tasks-raw", version: "1.0.0" },
            "io.modelcontextprotocol/clientCapabilities": {
              elicitation: {},
              ...(options.extension === false ? {} : { extensions: { [TASKS]: {} } }),
            },
          },
        },
      }),
    });
    const text = await response.text();
    const messages = (response.headers.get("content-type") ?? "").includes("text/event-stream")
      ? text
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => JSON.parse(line.slice(5)) as JsonObject)
      : [JSON.parse(text) as JsonObject];
    const answer = messages.find((m) => m.id === id);
    if (!answer) throw new Error(`no answer to ${method} in ${response.status} ${text}`);
    return answer as Answer;
  };
  const task = async (taskId: string, replica = "dispatcher", agent = "payer") =>
    (await modern("tasks/get", { taskId }, { replica, agent })).result ?? {};
  const decide = (callId: string, decision: ApprovalDecision) =>
    stack
      .dispatcherClient()
      .decideApproval({ callId, decision, reason: "" }, stack.as(tokens.boss ?? ""));
  const pending = async () =>
    (await stack.dispatcherClient().listApprovals({}, stack.as(tokens.boss ?? ""))).approvals.map(
      (a) => a.callId,
    );

  beforeAll(async () => {
    stack = await startStack({ replicas: { dispatcher: 2 } });
    const remove = defineTool({
      name: "files.delete",
      description: "Deletes a file; its caller confirms each call.",
      sideEffects: true,
      inputSchema: { type: "object", properties: { path: { type: "string" } } },
      handler: (args: { path: string }) => {
        deleted.push(args.path);
        return { deleted: args.path };
      },
    });
    const slow = defineTool({
      name: "jobs.slow",
      description: "Runs until it is cancelled, or for a minute.",
      inputSchema: { type: "object", properties: { job: { type: "string" } } },
      handler: (args: { job: string }, ctx) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve({ finished: args.job }), 60_000);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            slowEnds.push(`${args.job} aborted`);
            resolve({ aborted: args.job });
          });
        }),
    });
    served = await serveOnStack(stack, [payTool(ran), echoTool("data.echo"), remove, slow], {
      requiresApproval: ["pay.send"],
      requiresConfirmation: ["files.delete"],
    });
    // A long-running tool: its operator marks it as one whose calls may be tasks.
    const { tool: slowTool } = await stack.registryClient.getTool(
      { name: "jobs.slow" },
      stack.as(stack.adminToken),
    );
    if (!slowTool?.spec) throw new Error("jobs.slow was not registered");
    await stack.registryClient.updateTool(
      { tool: { ...slowTool.spec, taskSupport: TaskSupport.OPTIONAL } },
      stack.as(stack.adminToken),
    );
    for (const agent of ["payer", "other"]) {
      tokens[agent] = await stack.agentToken(agent);
      await stack.grantAll(agent);
    }
    tokens.boss = await stack.agentToken("boss", { roles: ["agent", "approver"] });
    await eventually(async () => {
      for (const replica of ["dispatcher", "dispatcher-2"]) {
        const listed = await modern("tools/list", {}, { replica });
        const names = ((listed.result?.tools ?? []) as JsonObject[]).map((t) => t.name);
        expect(names).toEqual(expect.arrayContaining(["pay.send", "files.delete", "jobs.slow"]));
        const echo = await modern("tools/call", { name: "data.echo", arguments: { text: "up" } });
        expect(echo.result?.isError).toBeFalsy();
      }
    });
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("2026-07-28: the server offers the extension; a held call answers a task any replica reads, completed with its result once approved", async () => {
    const discovered = await modern("server/discover", {});
    expect(JSON.stringify(discovered.result)).toContain(`"extensions":{"${TASKS}":{}}`);

    const created = await modern("tools/call", {
      name: "pay.send",
      arguments: { invoice: "ext-approved" },
    });
    const taskId = String(created.result?.taskId);
    expect(created.result).toMatchObject({
      resultType: "task",
      taskId: expect.stringMatching(/^tm-/),
      status: "working",
      statusMessage: expect.stringMatching(/^awaiting approval: call tm-/),
    });
    expect(created.result?.task).toBeUndefined();
    expect(Number.isInteger(created.result?.ttlMs)).toBe(true);
    // The other replica answers for it: the hold is in the shared bucket.
    expect(await task(taskId, "dispatcher-2")).toMatchObject({ taskId, status: "working" });
    expect(ran).not.toContain("ext-approved");

    await decide(taskId, ApprovalDecision.APPROVE);
    const done = await eventually(async () => {
      const now = await task(taskId, "dispatcher-2");
      expect(now.status).toBe("completed");
      return now;
    });
    expect(done.result).toMatchObject({
      content: [{ type: "text", text: '{"paid":"ext-approved"}' }],
      structuredContent: { paid: "ext-approved" },
    });
    expect(ran).toEqual(["ext-approved"]);
    // A task is its caller's own: another agent's tasks/get finds nothing, as for no task at all.
    const foreign = await modern("tasks/get", { taskId }, { agent: "other" });
    const unknown = await modern("tasks/get", { taskId: "tm-no-such-call" });
    expect(foreign.error?.code).toBe(-32602);
    expect(unknown.error?.code).toBe(-32602);
    expect(foreign.error?.message).toMatch(/^task not found: /);
  });

  it("2026-07-28: tasks/cancel on another replica withdraws a held call: it never runs and ends cancelled", async () => {
    const created = await modern("tools/call", {
      name: "pay.send",
      arguments: { invoice: "ext-cancelled" },
    });
    const taskId = String(created.result?.taskId);
    expect(await pending()).toContain(taskId);
    const cancelled = await modern("tasks/cancel", { taskId }, { replica: "dispatcher-2" });
    expect(cancelled.error).toBeUndefined();
    expect(cancelled.result?.taskId).toBeUndefined();
    expect(await pending()).not.toContain(taskId);
    const ended = await eventually(async () => {
      const now = await task(taskId);
      expect(now.status).toBe("cancelled");
      return now;
    });
    expect(ended.statusMessage).toMatch(/was withdrawn by its caller before it ran/);
    // Cancelling an ended task is the same empty answer.
    expect((await modern("tasks/cancel", { taskId })).error).toBeUndefined();
    const decided = await decide(taskId, ApprovalDecision.APPROVE).catch((e: unknown) => e);
    expect(decided).toBeInstanceOf(Error);
    expect(ran).not.toContain("ext-cancelled");
  });

  it("2026-07-28: a call that waits for its caller's confirmation is an input_required task; tasks/update answers it", async () => {
    const created = await modern("tools/call", {
      name: "files.delete",
      arguments: { path: "task.txt" },
    });
    const taskId = String(created.result?.taskId);
    expect(created.result?.resultType).toBe("task");
    const waiting = await task(taskId, "dispatcher-2");
    expect(waiting.status).toBe("input_required");
    const question = (waiting.inputRequests as JsonObject).confirm as JsonObject;
    expect(question.method).toBe("elicitation/create");
    expect((question.params as JsonObject).message).toContain('"files.delete"');
    expect(deleted).not.toContain("task.txt");

    const updated = await modern(
      "tasks/update",
      {
        taskId,
        inputResponses: { confirm: { action: "accept", content: { confirm: true } } },
      },
      { replica: "dispatcher-2" },
    );
    expect(updated.error).toBeUndefined();
    const done = await eventually(async () => {
      const now = await task(taskId);
      expect(now.status).toBe("completed");
      return now;
    });
    expect(done.result).toMatchObject({ structuredContent: { deleted: "task.txt" } });
    expect(deleted).toContain("task.txt");
  });

  it("2026-07-28: a call still running after its window becomes a task; tasks/cancel through the other replica interrupts it there", async () => {
    const started = Date.now();
    const created = await modern("tools/call", { name: "jobs.slow", arguments: { job: "long" } });
    expect(created.result).toMatchObject({ resultType: "task", status: "working" });
    expect(Date.now() - started).toBeLessThan(30_000);
    const taskId = String(created.result?.taskId);
    await eventually(async () =>
      expect(await task(taskId, "dispatcher-2")).toMatchObject({ status: "working" }),
    );
    const cancelled = await modern("tasks/cancel", { taskId }, { replica: "dispatcher-2" });
    expect(cancelled.error).toBeUndefined();
    const ended = await eventually(async () => {
      const now = await task(taskId, "dispatcher-2");
      expect(now.status).toBe("cancelled");
      return now;
    });
    expect(ended.result).toBeUndefined();
    await eventually(async () => expect(slowEnds).toEqual(["long aborted"]));
  });

  it("2026-07-28: without the extension declared, tasks/* are refused -32021 and a held call is a text result; tasks/list and tasks/result are no methods of the extension", async () => {
    const refused = await modern("tasks/get", { taskId: "tm-x" }, { extension: false });
    expect(refused.error?.code).toBe(-32021);
    expect(refused.error?.message).toContain(TASKS);
    // The extension lists no tasks and has no tasks/result: tasks/get inlines the result.
    expect((await modern("tasks/list", {})).error?.code).toBe(-32601);
    expect((await modern("tasks/result", { taskId: "tm-x" })).error?.code).toBe(-32601);
    const text = await modern(
      "tools/call",
      { name: "pay.send", arguments: { invoice: "ext-text" } },
      { extension: false },
    );
    expect(text.result?.resultType).not.toBe("task");
    expect(JSON.stringify(text.result?.content)).toContain("awaiting approval (call_id tm-");
  });
});
