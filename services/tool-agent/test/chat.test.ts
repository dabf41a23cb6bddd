import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { toJsonString } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import {
  AgentService,
  Effect,
  GetSystemStatusResponseSchema,
  PrincipalKind,
  ResourceKind,
  TaskStatus,
} from "@toolmesh/proto";
import { chat } from "@toolmesh/sdk";
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

// The ServiceAgent against real processes — nats-server, Permission, Registry, the Dispatcher and
// the tool agent — with a scripted OpenAI-compatible model standing in for the model.
describe("ServiceAgent chat", () => {
  let stack: TestStack;
  let model: ScriptedModel;
  let keyDir: string;
  let alice: string;
  let bob: string;
  const key = `sk-scripted-${Date.now().toString(36)}-secret`;
  /** AgentService at the Dispatcher's address: one address for calls and chat. */
  const agentService = () =>
    createClient(AgentService, createGrpcTransport({ baseUrl: stack.dispatcher.url }));
  const post = (token: string | undefined, body: unknown) =>
    fetch(`${stack.dispatcher.url}/chat`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  /** The tool messages the model was sent in the nth request of a conversation. */
  const toolResults = (match: string, n: number) =>
    (model.requestsFor(match)[n]?.body.messages ?? [])
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(String(m.content)) as Record<string, unknown>);

  beforeAll(async () => {
    model = await startScriptedModel();
    keyDir = await mkdtemp(path.join(tmpdir(), "toolmesh-model-key-"));
    await writeFile(path.join(keyDir, "key"), `${key}\n`, { mode: 0o600 });
    stack = await startStack({
      services: ["permission", "registry", "dispatcher", "tool-agent"],
      serviceEnv: {
        "tool-agent": {
          TOOLMESH_MODEL_URL: model.url,
          TOOLMESH_MODEL: "scripted-1",
          TOOLMESH_MODEL_API_KEY_FILE: path.join(keyDir, "key"),
          TOOLMESH_MODEL_TIMEOUT_MS: "1500",
          TOOLMESH_CHAT_HISTORY_MESSAGES: "8",
        },
      },
    });
    const admin = stack.as(stack.adminToken);
    for (const name of ["data.query", "data.insert", "mail.send"])
      await stack.registryClient.registerTool(
        {
          tool: {
            name,
            description: `The ${name} tool`,
            inputSchema: { type: "object", properties: { q: { type: "string" } } },
            runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:9" } } },
          },
        },
        admin,
      );
    await stack.permissionClient.grant(
      {
        grant: {
          principal: { kind: PrincipalKind.AGENT, id: "alice-bot" },
          resource: { kind: ResourceKind.GLOB, pattern: "data.*" },
          scopes: ["*"],
          effect: Effect.ALLOW,
          enabled: true,
        },
      },
      admin,
    );
    alice = await stack.agentToken("alice-bot");
    bob = await stack.agentToken("bob-bot");
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await model?.close();
    await rm(keyDir, { recursive: true, force: true });
  });

  it("lists only the tools the caller is granted, and keeps each principal's window its own", async () => {
    model.script({
      match: "W1 which tools",
      turns: [
        { toolCalls: [{ name: "list_tools", arguments: {} }] },
        { text: "You may use data.insert and data.query." },
        { toolCalls: [{ name: "get_tool_details", arguments: { name: "mail.send" } }] },
        { text: "mail.send is not yours to call." },
      ],
    });
    const first = await post(alice, { message: "W1 which tools are there?", chat_id: "w1" });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({
      response: "You may use data.insert and data.query.",
      chat_id: "w1",
      task_ids: [],
    });
    const listed = toolResults("W1 which tools", 1)[0]?.tools as { name: string }[];
    expect(listed.map((t) => t.name)).toEqual(["data.insert", "data.query"]);

    // The same window through the RPC at the Dispatcher: the model gets the earlier turns.
    const second = await agentService().chat(
      { message: "and mail.send?", chatId: "w1" },
      stack.as(alice),
    );
    expect(second.response).toBe("mail.send is not yours to call.");
    const resent = model.requestsFor("W1 which tools")[2]?.body.messages ?? [];
    expect(resent.map((m) => [m.role, m.content ?? null])).toEqual([
      ["system", expect.stringContaining("ServiceAgent")],
      ["user", "W1 which tools are there?"],
      ["assistant", null],
      ["tool", expect.stringContaining("data.query")],
      ["assistant", "You may use data.insert and data.query."],
      ["user", "and mail.send?"],
    ]);
    expect(toolResults("W1 which tools", 3).at(-1)).toEqual({
      error: { code: "NOT_FOUND", message: expect.stringContaining('tool "mail.send" not found') },
    });
    // The transcript: the window's messages as the model got them on its last turn, and its answer.
    const last = model.requestsFor("W1 which tools").at(-1)?.body.messages ?? [];
    console.info(
      `transcript (window w1 of alice-bot):\n${[
        ...last.slice(1),
        { role: "assistant", content: second.response },
      ]
        .map(
          (m) =>
            `${m.role}: ${String(m.content ?? JSON.stringify(m.tool_calls ?? null)).slice(0, 200)}`,
        )
        .join("\n")}`,
    );

    // Another principal naming the same chat id has a window of its own, and sees no tools.
    const before = model.requestsFor("W1 which tools").length;
    const bobs = await post(bob, { message: "W1 which tools can I use?", chat_id: "w1" });
    expect(bobs.status).toBe(200);
    const bobFirst = model.requestsFor("W1 which tools")[before]?.body.messages ?? [];
    expect(bobFirst.map((m) => m.role)).toEqual(["system", "user"]);
    expect(toolResults("W1 which tools", before + 1)[0]).toEqual({ tools: [] });
  });

  it("keeps windows across a restart of the tool agent, their history bounded", async () => {
    model.script({ match: "W2 turn", turns: [{ echo: true }] });
    const say = (n: number) =>
      agentService().chat({ message: `W2 turn ${n}`, chatId: "w2" }, stack.as(alice));
    for (const n of [1, 2, 3]) expect((await say(n)).response).toBe(`you said: W2 turn ${n}`);
    await stack.restart("tool-agent");
    expect((await say(4)).response).toBe("you said: W2 turn 4");
    const sent = (n: number) =>
      (model.requestsFor("W2 turn")[n - 1]?.body.messages ?? []).map((m) => m.content);
    const turns = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => [
        `W2 turn ${from + i}`,
        `you said: W2 turn ${from + i}`,
      ]).flat();
    // After the restart the model still gets the window's three earlier turns.
    expect(sent(4)).toEqual([expect.stringContaining("ServiceAgent"), ...turns(1, 3), "W2 turn 4"]);
    for (const n of [5, 6]) await say(n);
    // At most 8 messages of history are kept (TOOLMESH_CHAT_HISTORY_MESSAGES), whole turns.
    expect(sent(5)).toEqual([expect.stringContaining("ServiceAgent"), ...turns(1, 4), "W2 turn 5"]);
    expect(sent(6)).toEqual([expect.stringContaining("ServiceAgent"), ...turns(2, 5), "W2 turn 6"]);
  });

  it("answers many windows at once, each its own (the SDK's chat())", async () => {
    model.script({ match: "W3", turns: [{ echo: true, delayMs: 200 }] });
    const answers = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((n) =>
        chat(agentService(), `W3 window ${n}`, { chatId: `w3-${n}`, ...stack.as(alice) }),
      ),
    );
    expect(answers.map((a) => [a.chatId, a.response])).toEqual(
      [1, 2, 3, 4, 5, 6].map((n) => [`w3-${n}`, `you said: W3 window ${n}`]),
    );
  });

  it("turns malformed tool calls into error results the model reads", async () => {
    model.script({
      match: "W4 garbled",
      turns: [
        {
          toolCalls: [
            { name: "list_tools", arguments: "{not json" },
            { name: "launch_rockets", arguments: {} },
            { name: "get_tool_details", arguments: { tool: "data.query" } },
          ],
        },
        { text: "Let me try that again." },
      ],
    });
    const res = await agentService().chat({ message: "W4 garbled", chatId: "w4" }, stack.as(alice));
    expect(res.response).toBe("Let me try that again.");
    expect(toolResults("W4 garbled", 1)).toEqual([
      { error: { code: "INVALID_ARGUMENT", message: expect.stringContaining("are not JSON") } },
      {
        error: { code: "NOT_FOUND", message: expect.stringContaining('no tool "launch_rockets"') },
      },
      {
        error: {
          code: "INVALID_ARGUMENT",
          message: expect.stringMatching(/\/name: is required.*\/tool: is not allowed/),
        },
      },
    ]);
  });

  it("gives a clear, bounded error when the model answers nonsense, fails, is slow or is down; the service stays up", async () => {
    model.script({ match: "W5 raw", turns: [{ raw: "<html>busy</html>" }] });
    model.script({ match: "W5 http", turns: [{ status: 500, body: '{"error":"overloaded"}' }] });
    model.script({ match: "W5 slow", turns: [{ text: "late", delayMs: 5000 }] });
    model.script({ match: "W5 hang", turns: [{ hangUp: true }] });
    const raw = await post(alice, { message: "W5 raw", chat_id: "w5" });
    expect(raw.status).toBe(503);
    expect(await messageOf(raw)).toMatch(
      /^the model at http:\/\/127\.0\.0\.1:\d+\/v1 answered something that is not a Chat Completions reply \(not JSON\)/,
    );
    const http = await failure(
      agentService().chat({ message: "W5 http", chatId: "w5" }, stack.as(alice)),
    );
    expect([http.code, http.rawMessage]).toEqual([
      Code.Unavailable,
      expect.stringMatching(/answered HTTP 500: \{"error":"overloaded"\}$/),
    ]);
    const started = Date.now();
    const slow = await post(alice, { message: "W5 slow", chat_id: "w5" });
    expect(Date.now() - started).toBeLessThan(4500);
    expect(slow.status).toBe(504);
    expect(await messageOf(slow)).toMatch(
      /did not answer within 1500 ms \(TOOLMESH_MODEL_TIMEOUT_MS\)/,
    );
    const hung = await failure(
      agentService().chat({ message: "W5 hang", chatId: "w5" }, stack.as(alice)),
    );
    expect(hung.code).toBe(Code.Unavailable);
    expect(hung.rawMessage).toMatch(/^the model at .* cannot be reached/);

    // Down: nothing listens where the model was. Back on the same port, chat works again.
    const port = Number(new URL(model.url).port);
    const scripts = model.requests.length;
    await model.close();
    const down = await failure(
      agentService().chat({ message: "W5 down", chatId: "w5" }, stack.as(alice)),
    );
    expect([down.code, down.rawMessage]).toEqual([
      Code.Unavailable,
      expect.stringMatching(
        /^the model at http:\/\/127\.0\.0\.1:\d+\/v1 cannot be reached: ECONNREFUSED/,
      ),
    ]);
    model = await startScriptedModel([{ match: "W5 back", turns: [{ echo: true }] }], { port });
    const back = await agentService().chat({ message: "W5 back", chatId: "w5" }, stack.as(alice));
    expect(back.response).toBe("you said: W5 back");
    expect(scripts).toBeGreaterThan(0);
    // A failed message left nothing in the window: the model sees only what was answered.
    expect(model.requests.at(-1)?.body.messages?.map((m) => m.content)).toEqual([
      expect.stringContaining("ServiceAgent"),
      "W5 back",
    ]);
  });

  it("refuses bad requests with what to fix", async () => {
    const unauthenticated = await post(undefined, { message: "hi", chat_id: "w6" });
    expect(unauthenticated.status).toBe(401);
    const cases: [unknown, string][] = [
      [
        "{not json",
        'body: is not JSON: send {"message": "which tools read data?", "chat_id": "w1"}',
      ],
      [{ chat_id: "w6" }, "message: is required: a string to say"],
      [{ message: "  ", chat_id: "w6" }, "message: is empty; say something"],
      [
        { message: "hi", chat_id: "has spaces" },
        "chat_id: must be 1-128 characters of A-Z a-z 0-9 _ . : -",
      ],
      [
        { message: "hi", chat_id: 7 },
        "chat_id: must be a string; leave it out to open a new window",
      ],
    ];
    for (const [body, message] of cases) {
      const res = await post(alice, body);
      expect([res.status, await messageOf(res)]).toEqual([400, message]);
    }
    const long = await failure(
      agentService().chat({ message: "x".repeat(16_001), chatId: "w6" }, stack.as(alice)),
    );
    expect(long.rawMessage).toBe(
      "message: is 16001 characters; at most 16000 (TOOLMESH_CHAT_MAX_MESSAGE_CHARS)",
    );
    // No chat id opens a new window and says which.
    model.script({ match: "W6 new", turns: [{ text: "hello" }] });
    const opened = await post(alice, { message: "W6 new window" });
    expect(await opened.json()).toEqual({
      response: "hello",
      chat_id: expect.stringMatching(/^w-[0-9a-f]{12}$/),
      task_ids: [],
    });
  });

  it("files a task for the caller with submit_task; only the caller and admins see it", async () => {
    model.script({
      match: "W7 I need",
      turns: [
        {
          toolCalls: [
            {
              name: "submit_task",
              arguments: {
                description: "Upper-case a text",
                tool_name: "text.shout",
                inputs: "text: string",
                outputs: "text: string, upper-cased",
                acceptance_checks: ["hello → HELLO"],
                preferred_runtime: "docker",
              },
            },
          ],
        },
        { text: "Filed." },
      ],
    });
    const res = await agentService().chat(
      { message: "W7 I need a tool that shouts", chatId: "w7" },
      stack.as(alice),
    );
    expect(res.taskIds).toHaveLength(1);
    const id = res.taskIds[0] ?? "";
    expect(toolResults("W7 I need", 1)[0]).toEqual({
      task_id: id,
      status: "pending",
      queue_position: expect.any(Number),
    });
    const { task } = await agentService().getTask({ id }, stack.as(alice));
    expect(task?.owner?.agentId).toBe("alice-bot");
    expect(task?.chatId).toBe("w7");
    expect(task?.spec?.toolName).toBe("text.shout");
    expect(task?.traceId).toMatch(/^[0-9a-f]{32}$/);
    // No script answers the CodingAgent's brief: its model refuses, and the task says so.
    const ended = await eventually(async () => {
      const { task: t } = await agentService().getTask({ id }, stack.as(alice));
      if (t?.status !== TaskStatus.FAILED) throw new Error(`task is ${TaskStatus[t?.status ?? 0]}`);
      return t;
    }, 30_000);
    expect(ended.error?.code).toBe("model_unavailable");
    expect(ended.log.map((e) => e.text)).toEqual(
      expect.arrayContaining([
        "queued by alice-bot",
        expect.stringMatching(/^started \(trace [0-9a-f]{32}\)$/),
        expect.stringMatching(/^failed: model_unavailable: the model at .* answered HTTP 400/),
      ]),
    );
    const hidden = await failure(agentService().getTask({ id }, stack.as(bob)));
    expect(hidden.code).toBe(Code.NotFound);
    expect((await agentService().listTasks({}, stack.as(bob))).tasks).toEqual([]);
    const all = await agentService().listTasks({}, stack.as(stack.adminToken));
    expect(all.tasks.map((t) => t.id)).toContain(id);
  });

  it("shows the caller's windows and tasks in GetSystemStatus, and never the model's key", async () => {
    const status = await agentService().getSystemStatus({}, stack.as(alice));
    expect(status.tools).toMatchObject({ total: 2, active: 2 });
    expect(new Set(status.windows.map((w) => w.owner?.agentId))).toEqual(new Set(["alice-bot"]));
    expect(status.windows.map((w) => w.chatId)).toEqual(expect.arrayContaining(["w1", "w2", "w7"]));
    expect(status.windows.every((w) => !w.imWindow)).toBe(true);
    expect(status.im?.configured).toBe(false);
    expect(status.model).toMatchObject({ configured: true, url: model.url, model: "scripted-1" });
    expect(status.codingAgent?.concurrency).toBe(1);
    expect(status.codingAgent?.recentTasks.length).toBeGreaterThan(0);

    const everything = await agentService().getSystemStatus({}, stack.as(stack.adminToken));
    expect(everything.windows.map((w) => w.owner?.agentId)).toEqual(
      expect.arrayContaining(["alice-bot", "bob-bot"]),
    );
    // The registry's 3 tools and the CodingAgent's 10.
    expect(everything.tools?.total).toBe(13);

    // The key went to the model as a bearer token, and nowhere else.
    expect(model.requests.every((r) => r.authorization === `Bearer ${key}`)).toBe(true);
    expect(toJsonString(GetSystemStatusResponseSchema, everything)).not.toContain(key);
    expect(await stack.logText()).not.toContain(key);
  });
});
