import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { AgentService, type BuildRuntime, TaskStatus } from "@toolmesh/proto";
import {
  eventually,
  failure,
  type ScriptedModel,
  startScriptedModel,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The message of an error answer of the facade. */
async function messageOf(res: Response): Promise<string> {
  return ((await res.json()) as { message: string }).message;
}

// The Router's queue against real processes: its concurrency, a tool agent that dies mid-build,
// and a stack without a model, where chat is refused and tasks wait.
describe("the Router", () => {
  let stack: TestStack;
  /** The ServiceAgent's model, and the CodingAgent's own (TOOLMESH_CODING_MODEL_URL). */
  let model: ScriptedModel;
  let coding: ScriptedModel;
  let token: string;
  const agents = () =>
    createClient(AgentService, createGrpcTransport({ baseUrl: stack.dispatcher.url }));
  const submit = async (description: string) =>
    (await agents().submitTask({ spec: { description } }, stack.as(token))).task?.id ?? "";
  const statusOf = async (id: string) =>
    (await agents().getTask({ id }, stack.as(token))).task?.status ?? TaskStatus.UNSPECIFIED;

  beforeAll(async () => {
    model = await startScriptedModel();
    coding = await startScriptedModel([
      { match: "QUICK", turns: [{ text: "I cannot build this.", delayMs: 1500 }] },
      { match: "STUCK", turns: [{ text: "never", delayMs: 120_000 }] },
    ]);
    stack = await startStack({
      services: ["permission", "registry", "dispatcher", "tool-agent"],
      serviceEnv: {
        "tool-agent": {
          TOOLMESH_MODEL_URL: model.url,
          TOOLMESH_CODING_MODEL_URL: coding.url,
          TOOLMESH_CODING_MODEL: "coder-1",
          TOOLMESH_MODEL_TIMEOUT_MS: "300000",
          TOOLMESH_CODING_CONCURRENCY: "1",
        },
      },
    });
    token = await stack.agentToken("dave-bot");
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await model?.close();
    await coding?.close();
  });

  it("runs at most TOOLMESH_CODING_CONCURRENCY tasks at once, oldest first; the rest queue", async () => {
    const ids = [await submit("QUICK one"), await submit("QUICK two"), await submit("QUICK three")];
    const seen = await eventually(async () => {
      const s = await agents().getSystemStatus({}, stack.as(token));
      if (s.codingAgent?.runningCount !== 1) throw new Error("none running yet");
      return s.codingAgent;
    });
    expect(seen.runningTaskIds).toEqual([ids[0]]);
    expect(seen.queuedCount).toBe(2);
    for (const id of ids)
      await eventually(async () => {
        if ((await statusOf(id)) !== TaskStatus.FAILED) throw new Error("not ended");
      }, 30_000);
    // One after another: each started after the one before it ended.
    const tasks = await Promise.all(
      ids.map(async (id) => (await agents().getTask({ id }, stack.as(token))).task),
    );
    for (let i = 1; i < tasks.length; i++) {
      const started =
        Number(tasks[i]?.startedAt?.seconds ?? 0n) * 1000 + (tasks[i]?.startedAt?.nanos ?? 0) / 1e6;
      const before = tasks[i - 1]?.finishedAt;
      const finished = Number(before?.seconds ?? 0n) * 1000 + (before?.nanos ?? 0) / 1e6;
      expect(started).toBeGreaterThanOrEqual(finished - 5);
    }
    expect(tasks.map((t) => t?.error?.code)).toEqual(Array(3).fill("no_tool_registered"));
    // The CodingAgent asked its own model, by its own name; the ServiceAgent's was not asked.
    expect(coding.requestsFor("QUICK").map((r) => r.body.model)).toEqual(Array(3).fill("coder-1"));
    expect(model.requests).toEqual([]);
    expect((await agents().getSystemStatus({}, stack.as(token))).model).toMatchObject({
      codingUrl: coding.url,
      codingModel: "coder-1",
    });
  });

  it("fails a task whose tool agent died (agent_lost) and runs the queued ones after a restart", async () => {
    const stuck = await submit("STUCK forever");
    const queued = await submit("QUICK after the restart");
    await eventually(async () => {
      if ((await statusOf(stuck)) !== TaskStatus.RUNNING) throw new Error("not running");
    });
    expect(await statusOf(queued)).toBe(TaskStatus.PENDING);
    await stack.service("tool-agent").kill();
    await stack.service("tool-agent").start();
    const lost = await eventually(async () => {
      const { task } = await agents().getTask({ id: stuck }, stack.as(token));
      if (task?.status !== TaskStatus.FAILED)
        throw new Error(`task is ${TaskStatus[task?.status ?? 0]}`);
      return task;
    }, 30_000);
    expect(lost.error?.code).toBe("agent_lost");
    expect(lost.error?.message).toMatch(
      /^the tool agent building it \([0-9a-f-]{36}\) stopped before it ended; submit the task again$/,
    );
    expect(lost.log.at(-1)?.text).toMatch(/^failed: agent_lost: /);
    await eventually(async () => {
      if ((await statusOf(queued)) !== TaskStatus.FAILED) throw new Error("queued task not run");
    }, 30_000);
  });
});

describe("ServiceAgent without a model", () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack({
      services: ["permission", "registry", "dispatcher", "tool-agent"],
      serviceEnv: { "tool-agent": { TOOLMESH_CODING_MAX_QUEUED: "3" } },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it("refuses bad task specs and queries with what to fix, and a principal's fourth queued task", async () => {
    const token = await stack.agentToken("erin-bot");
    const agents = createClient(
      AgentService,
      createGrpcTransport({ baseUrl: stack.dispatcher.url }),
    );
    const refusals: [Promise<unknown>, string][] = [
      [
        agents.submitTask({}, stack.as(token)),
        "spec: is required: at least a description of the tool",
      ],
      [
        agents.submitTask({ spec: { description: "  " } }, stack.as(token)),
        "spec.description: is required: say what the tool must do",
      ],
      [
        agents.submitTask({ spec: { description: "x".repeat(8001) } }, stack.as(token)),
        "spec.description: is 8001 characters; at most 8000 allowed",
      ],
      [
        agents.submitTask({ spec: { description: "d", toolName: "Not A Name" } }, stack.as(token)),
        'spec.tool_name: "Not A Name" is not a valid name: use lowercase letters, digits, _ - and single dots between parts, starting with a letter (for example data.query)',
      ],
      [
        agents.submitTask(
          { spec: { description: "d", acceptanceChecks: Array(21).fill("ok") } },
          stack.as(token),
        ),
        "spec.acceptance_checks: has 21 checks; at most 20 allowed",
      ],
      [
        agents.submitTask(
          { spec: { description: "d", preferredRuntime: 9 as BuildRuntime } },
          stack.as(token),
        ),
        "spec.preferred_runtime: 9 is not a BuildRuntime",
      ],
      [
        agents.submitTask({ spec: { description: "d" }, chatId: "no spaces" }, stack.as(token)),
        "chat_id: must be 1-128 characters of A-Z a-z 0-9 _ . : -",
      ],
      [
        agents.getTask({ id: "42" }, stack.as(token)),
        "id: is a task id: 32 lowercase hex characters",
      ],
      [
        agents.listTasks({ status: 9 as TaskStatus }, stack.as(token)),
        "status: 9 is not a TaskStatus",
      ],
      [
        agents.listTasks({ pageSize: 501 }, stack.as(token)),
        "page_size: is 501; at most 500 allowed",
      ],
      [
        agents.listTasks({ pageToken: "nope" }, stack.as(token)),
        "page_token: malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page",
      ],
    ];
    for (const [call, message] of refusals) {
      const refused = await failure(call);
      expect([refused.code, refused.rawMessage]).toEqual([Code.InvalidArgument, message]);
    }
    for (const n of [1, 2, 3])
      await agents.submitTask({ spec: { description: `queued ${n}` } }, stack.as(token));
    const full = await failure(
      agents.submitTask({ spec: { description: "one too many" } }, stack.as(token)),
    );
    expect([full.code, full.rawMessage]).toEqual([
      Code.ResourceExhausted,
      "you have 3 tasks queued, the most TOOLMESH_CODING_MAX_QUEUED allows; wait for one to start or check them with ListTasks",
    ]);
    // Pages of the caller's tasks, newest first.
    const first = await agents.listTasks({ pageSize: 2 }, stack.as(token));
    const second = await agents.listTasks(
      { pageSize: 2, pageToken: first.nextPageToken },
      stack.as(token),
    );
    expect([...first.tasks, ...second.tasks].map((t) => t.spec?.description)).toEqual([
      "queued 3",
      "queued 2",
      "queued 1",
    ]);
    expect(second.nextPageToken).toBe("");
  });

  it("answers 503 naming TOOLMESH_MODEL_URL; tasks wait; a tool agent that is gone is UNAVAILABLE", async () => {
    const token = await stack.agentToken("carol-bot");
    const chat = () =>
      fetch(`${stack.dispatcher.url}/chat`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ message: "hello", chat_id: "c1" }),
      });
    const res = await chat();
    expect(res.status).toBe(503);
    expect(await messageOf(res)).toMatch(
      /^no model is configured for the ServiceAgent: set TOOLMESH_MODEL_URL/,
    );
    const agents = createClient(
      AgentService,
      createGrpcTransport({ baseUrl: stack.dispatcher.url }),
    );
    const refused = await failure(agents.chat({ message: "hello", chatId: "c1" }, stack.as(token)));
    expect(refused.code).toBe(Code.Unavailable);

    const queued =
      (await agents.getSystemStatus({}, stack.as(token))).codingAgent?.queuedCount ?? 0;
    const { task } = await agents.submitTask(
      { spec: { description: "Count words" } },
      stack.as(token),
    );
    const status = await agents.getSystemStatus({}, stack.as(token));
    expect(status.model?.configured).toBe(false);
    expect(status.codingAgent?.queuedCount).toBe(queued + 1);
    expect((await agents.getTask({ id: task?.id ?? "" }, stack.as(token))).task?.status).toBe(
      TaskStatus.PENDING,
    );

    await stack.service("tool-agent").stop();
    const gone = await chat();
    expect(gone.status).toBe(503);
    expect(await messageOf(gone)).toMatch(
      /^the tool agent at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(ECONNREFUSED\); is it running\? \(TOOLMESH_TOOL_AGENT_URL\)$/,
    );
    // The Dispatcher itself is unaffected.
    expect((await fetch(`${stack.dispatcher.url}/health`)).status).toBe(200);
  });
});
