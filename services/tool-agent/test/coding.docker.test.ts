import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import {
  AgentService,
  BuildRuntime,
  CallStatus,
  type Task,
  TaskLogKind,
  TaskStatus,
  ToolStatus,
} from "@toolmesh/proto";
import {
  eventually,
  failure,
  reachEngine,
  repoRoot,
  type ScriptedCall,
  type ScriptedModel,
  startScriptedModel,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHOUT_CGI, WORDS_PY } from "./built-tools.js";

const run = promisify(execFile);

// The CodingAgent for real: a Docker Engine (images built here, never pulled), uv, the whole stack
// as processes (Audit included, so the build's records can be read back), and a scripted model.
const engine = await reachEngine();
if (!engine.ok) console.warn(`tool agent docker tests skipped: ${engine.reason}`);

const uv = path.join(repoRoot, ".venv", "bin", "uv");
const call = (name: string, args: Record<string, unknown>): { toolCalls: ScriptedCall[] } => ({
  toolCalls: [{ name, arguments: args }],
});

describe.skipIf(!engine.ok)("the CodingAgent builds tools in a sandbox", () => {
  const docker = (engine as { docker: Docker }).docker;
  let stack: TestStack;
  let model: ScriptedModel;
  let admin: string;
  let alice: string;
  const taskIds: string[] = [];
  const agents = () =>
    createClient(AgentService, createGrpcTransport({ baseUrl: stack.dispatcher.url }));
  const submit = async (description: string, toolName = "", runtime = BuildRuntime.DOCKER) => {
    const { task } = await agents().submitTask(
      { spec: { description, toolName, preferredRuntime: runtime } },
      stack.as(alice),
    );
    taskIds.push(task?.id ?? "");
    return task?.id ?? "";
  };
  /** The task once it ended, with its log. */
  const ended = (id: string, timeoutMs = 120_000) =>
    eventually(
      async () => {
        const { task } = await agents().getTask({ id }, stack.as(alice));
        if (task?.status !== TaskStatus.SUCCEEDED && task?.status !== TaskStatus.FAILED)
          throw new Error(`task is ${TaskStatus[task?.status ?? 0]}`);
        return task;
      },
      timeoutMs,
      `task ${id} to end`,
    );
  const toolLines = (task: Task) =>
    task.log.filter((e) => e.kind === TaskLogKind.TOOL).map((e) => e.text);
  const cli = (args: string[]) =>
    run(process.execPath, [path.join(repoRoot, "libs/cli/bin/toolmesh.mjs"), ...args], {
      env: {
        ...process.env,
        TOOLMESH_REGISTRY_URL: stack.registry.url,
        TOOLMESH_DISPATCHER_URL: stack.dispatcher.url,
        TOOLMESH_TOKEN: admin,
        NO_COLOR: "1",
      },
    });

  beforeAll(async () => {
    if (!existsSync(uv))
      throw new Error(`no uv at ${uv}: run npm run setup (it installs uv into .venv)`);
    model = await startScriptedModel();
    stack = await startStack({
      services: ["permission", "registry", "dispatcher", "audit", "tool-agent"],
      serviceEnv: {
        "tool-agent": {
          TOOLMESH_MODEL_URL: model.url,
          TOOLMESH_CODING_CONCURRENCY: "3",
          TOOLMESH_CODING_MAX_STEPS: "8",
          TOOLMESH_CODING_TIMEOUT_MS: "60000",
          TOOLMESH_CODING_UV: uv,
          TOOLMESH_DOCKER_SOCKET: engine.ok ? engine.socket : "",
        },
      },
    });
    admin = stack.adminToken;
    alice = await stack.agentToken("alice-bot");
    await stack.grantAll("alice-bot");
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    await model?.close();
    // The images this run built; the sandbox image stays for the next run.
    for (const image of await docker.listImages({ filters: { reference: ["toolmesh-built/*"] } }))
      if (image.RepoTags?.some((tag) => taskIds.some((id) => tag.endsWith(`:${id.slice(0, 12)}`))))
        await docker
          .getImage(image.Id)
          .remove({ force: true })
          .catch(() => {});
  });

  it("builds a tool a chat asked for, registers it disabled, and it runs once an operator enables it", async () => {
    model.script({
      match: "I need a tool that shouts",
      turns: [
        call("submit_task", {
          description: "BUILD-SHOUT: upper-case the text it is given",
          tool_name: "text.shout",
          inputs: "text (string)",
          outputs: "text (string), upper-cased",
          acceptance_checks: ['{"text":"hello"} gives {"text":"HELLO"}'],
          preferred_runtime: "docker",
        }),
        { text: "Filed; the CodingAgent builds it." },
      ],
    });
    model.script({
      match: "BUILD-SHOUT",
      turns: [
        call("create_docker_env", {}),
        call("write_file", { path: "www/cgi-bin/shout", content: SHOUT_CGI, executable: true }),
        call("write_file", { path: "www/healthz", content: "ok\n" }),
        call("run_in_docker", {
          command: `printf '{"text":"hello"}' | REQUEST_METHOD=POST sh www/cgi-bin/shout`,
        }),
        call("register_tool", {
          name: "text.shout",
          description: "Upper-cases a text.",
          input_schema: {
            type: "object",
            properties: { text: { type: "string" } },
            required: ["text"],
          },
          runtime: "docker",
          command: ["sh", "-c", "exec httpd -f -p 127.0.0.1:$TOOLMESH_TOOL_PORT -h /app/www"],
          protocol: "http",
          http_path: "/cgi-bin/shout",
        }),
        { text: "Registered text.shout." },
      ],
    });
    const chat = await agents().chat(
      { message: "I need a tool that shouts", chatId: "build-1" },
      stack.as(alice),
    );
    expect(chat.taskIds).toHaveLength(1);
    const id = chat.taskIds[0] ?? "";
    taskIds.push(id);
    const task = await ended(id);
    expect([task.status, task.toolName, task.error]).toEqual([
      TaskStatus.SUCCEEDED,
      "text.shout",
      undefined,
    ]);
    expect(task.steps).toBe(5);
    // The transcript: what the chat answered and what each of the build's steps did.
    console.info(
      `transcript: chat "I need a tool that shouts" → "${chat.response}" (task ${id}); the build:\n${task.log.map((e) => `${TaskLogKind[e.kind]} ${e.text}`).join("\n")}`,
    );
    expect(toolLines(task)).toEqual([
      expect.stringMatching(/^create_docker_env SUCCESS: \{"container":"[0-9a-f]{12}"/),
      expect.stringMatching(/^write_file SUCCESS: \{"path":"www\/cgi-bin\/shout","bytes":\d+\}$/),
      expect.stringMatching(/^write_file SUCCESS/),
      expect.stringMatching(
        /^run_in_docker SUCCESS: \{"exit_code":0,"stdout":".*\{\\"text\\":\\"HELLO\\"\}/,
      ),
      expect.stringMatching(
        /^register_tool SUCCESS: \{"tool_name":"text.shout","status":"disabled"/,
      ),
    ]);

    // Registered disabled, with the tool agent's name on it.
    const { tool } = await stack.registryClient.getTool({ name: "text.shout" }, stack.as(admin));
    expect(tool?.spec?.status).toBe(ToolStatus.DISABLED);
    expect(tool?.updatedBy).toBe("toolmesh-tool-agent");
    expect(tool?.spec?.labels["toolmesh.task"]).toBe(id);
    expect(tool?.spec?.runtime?.kind.case).toBe("docker");

    // Refused until an operator enables it; then an agent calls it through the chain.
    const dispatch = () =>
      stack
        .dispatcherClient()
        .dispatch({ tool: "text.shout", arguments: { text: "hello toolmesh" } }, stack.as(alice));
    const refused = await failure(dispatch());
    expect(refused.code).toBe(Code.FailedPrecondition);
    const enabled = await cli(["tools", "enable", "text.shout"]);
    expect(enabled.stdout).toMatch(/^enabled text\.shout \(revision \d+\)$/m);
    const called = await eventually(async () => {
      const res = await dispatch();
      if (res.status !== CallStatus.SUCCESS) throw new Error(JSON.stringify(res.error));
      return res;
    }, 60_000);
    expect(called.output).toEqual({ text: "HELLO TOOLMESH" });

    // The call's records, and the whole build's, under its trace id, by the CodingAgent alone.
    const audit = stack.auditClient();
    const callRecords = await eventually(async () => {
      const { records } = await audit.queryRecords({ callId: called.callId }, stack.as(admin));
      if (records.length === 0) throw new Error("no record yet");
      return records;
    });
    expect(callRecords[0]).toMatchObject({ tool: "text.shout", agentId: "alice-bot" });
    const build = await eventually(async () => {
      const { records } = await audit.queryRecords({ traceId: task.traceId }, stack.as(admin));
      if (records.length < 5) throw new Error(`${records.length} records`);
      return records;
    });
    expect(new Set(build.map((r) => r.agentId))).toEqual(new Set(["toolmesh-coding-agent"]));
    expect(new Set(build.map((r) => r.tool))).toEqual(
      new Set([
        "coding.create_docker_env",
        "coding.write_file",
        "coding.run_in_docker",
        "coding.register_tool",
      ]),
    );
    const { events } = await audit.getTrace({ traceId: task.traceId }, stack.as(admin));
    expect(events.length).toBeGreaterThanOrEqual(10);
    // The sandbox is gone with the build.
    expect(
      await docker.listContainers({ all: true, filters: { label: [`toolmesh.task=${id}`] } }),
    ).toEqual([]);
  });

  it("builds a uv project as a local tool, tested in its sandbox and run on the host once enabled", async () => {
    model.script({
      match: "BUILD-WORDS",
      turns: [
        call("create_uv_project", { name: "wordcount" }),
        call("write_file", { path: "wordcount/main.py", content: WORDS_PY }),
        call("run_in_uv", {
          project: "wordcount",
          command: [
            "python",
            "-c",
            "import sys; sys.path.insert(0, 'wordcount'); import main; assert main.count('a b c') == 3; print('counted')",
          ],
        }),
        call("register_tool", {
          name: "text.words",
          description: "Counts the words of a text.",
          input_schema: { type: "object", properties: { text: { type: "string" } } },
          runtime: "uv",
          project: "wordcount",
          command: ["python", "main.py"],
          http_path: "/",
        }),
        { text: "Registered text.words." },
      ],
    });
    const id = await submit(
      "BUILD-WORDS: count the words of a text",
      "text.words",
      BuildRuntime.UV,
    );
    const task = await ended(id);
    expect(task.toolName, task.log.map((e) => e.text).join("\n")).toBe("text.words");
    expect(toolLines(task)[2]).toMatch(/^run_in_uv SUCCESS: \{"exit_code":0,"stdout":"counted\\n"/);
    const { tool } = await stack.registryClient.getTool({ name: "text.words" }, stack.as(admin));
    expect(tool?.spec?.status).toBe(ToolStatus.DISABLED);
    expect(tool?.spec?.runtime?.kind.case).toBe("local");
    await cli(["tools", "enable", "text.words"]);
    const res = await eventually(async () => {
      const r = await stack
        .dispatcherClient()
        .dispatch(
          { tool: "text.words", arguments: { text: "one two three four" } },
          stack.as(alice),
        );
      if (r.status !== CallStatus.SUCCESS) throw new Error(JSON.stringify(r.error));
      return r;
    }, 60_000);
    expect(res.output).toEqual({ words: 4 });
  });

  it("keeps the sandbox away from the stack's ports and the host's files, as nobody", async () => {
    const token = path.join(stack.dataDir, "admin.token");
    model.script({
      match: "SANDBOX-PROBE",
      turns: [
        call("create_docker_env", {}),
        call("run_in_docker", {
          command: [
            "id",
            "touch /etc/probe; echo write=$?",
            `wget -q -T 2 -O- ${stack.dispatcher.url}/health; echo net=$?`,
            `cat ${token}; echo read=$?`,
            "cat /proc/self/status | grep CapEff",
          ].join("; "),
        }),
        call("write_file", { path: "../escape.txt", content: "out" }),
        { text: "Probed." },
      ],
    });
    const task = await ended(await submit("SANDBOX-PROBE: look around"));
    expect(task.error?.code).toBe("no_tool_registered");
    const [, probe, outside] = toolLines(task);
    expect(probe).toContain("uid=65534(nobody) gid=65534(nogroup)");
    expect(probe).toContain("Read-only file system");
    expect(probe).toContain("write=1");
    expect(probe).toContain("net=1");
    expect(probe).toContain("No such file or directory");
    expect(probe).toContain("read=1");
    expect(probe).toContain("CapEff:\\t0000000000000000");
    expect(outside).toBe(
      'write_file FAILURE: bad_path "../escape.txt" is not inside the workspace; give a relative path such as src/main.py',
    );
  });

  it("ends a task over its step, token or time budget FAILED with its log", async () => {
    model.script({
      match: "STEP-LOOP",
      turns: [call("create_docker_env", {}), call("read_file", { path: "nothing.txt" })],
    });
    model.script({ match: "TOKEN-HOG", tokensPerTurn: 600_000, turns: [{ text: "thinking" }] });
    model.script({
      match: "TIME-SLOW",
      turns: [call("create_docker_env", {}), call("run_in_docker", { command: "sleep 600" })],
    });
    const [steps, tokens] = await Promise.all([
      ended(await submit("STEP-LOOP: read forever")),
      ended(await submit("TOKEN-HOG: think a lot")),
    ]);
    expect(steps.error?.code).toBe("step_budget");
    expect(steps.error?.message).toBe(
      "the build would take more than 8 tool calls (TOOLMESH_CODING_MAX_STEPS)",
    );
    expect(toolLines(steps)).toHaveLength(8);
    expect(steps.log.at(-1)?.text).toMatch(/^failed: step_budget: /);
    expect(tokens.error?.code).toBe("token_budget");
    expect(tokens.error?.message).toMatch(
      /^the build used 600000 model tokens, over its budget of 500000/,
    );
    const slow = await ended(await submit("TIME-SLOW: wait for ever"), 120_000);
    expect(slow.error?.code).toBe("time_budget");
    expect(slow.error?.message).toMatch(/^the build ran past its time budget of 60000 ms/);
    expect(slow.log.at(-1)?.text).toMatch(/^failed: time_budget: /);
  }, 180_000);

  it("ends a build that fails FAILED, with what failed in its log", async () => {
    model.script({
      match: "BROKEN-BUILD",
      turns: [
        call("create_docker_env", {}),
        call("write_file", { path: "tool.sh", content: "if then fi (\n", executable: true }),
        call("run_in_docker", { command: "sh -n tool.sh" }),
        call("register_tool", {
          name: "text.other",
          description: "Not the tool asked for.",
          input_schema: { type: "object" },
          runtime: "docker",
          command: ["sh", "tool.sh"],
        }),
        { text: "The build fails: tool.sh has a syntax error." },
      ],
    });
    const task = await ended(await submit("BROKEN-BUILD: something", "text.broken"));
    expect(task.status).toBe(TaskStatus.FAILED);
    expect(task.error).toMatchObject({
      code: "no_tool_registered",
      message:
        "the CodingAgent stopped without registering a tool: The build fails: tool.sh has a syntax error.",
    });
    const lines = toolLines(task);
    expect(lines[2]).toMatch(/^run_in_docker SUCCESS: \{"exit_code":2,.*syntax error/);
    expect(lines[3]).toBe(
      'register_tool FAILURE: wrong_name the task asks for a tool named "text.broken"; register that name',
    );
    const missing = await failure(
      stack.registryClient.getTool({ name: "text.other" }, stack.as(admin)),
    );
    expect(missing.code).toBe(Code.NotFound);
  });
});
