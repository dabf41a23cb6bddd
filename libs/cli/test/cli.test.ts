import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "@toolmesh/proto";
import {
  eventually,
  httpToolScript,
  LineWatcher,
  type OperatorStack,
  repoRoot,
  startOperatorStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);
const bin = path.join(repoRoot, "libs/cli/bin/toolmesh.mjs");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// The toolmesh command, run as a process against the whole stack (launcher, free ports).
describe("toolmesh CLI", () => {
  let op: OperatorStack;
  let backend: http.Server;
  let dir: string;
  const children: ChildProcess[] = [];

  const cli = async (args: string[], env: Record<string, string> = {}): Promise<Run> => {
    try {
      const { stdout, stderr } = await execFileAsync(process.execPath, [bin, ...args], {
        env: { ...process.env, ...op.env, TOOLMESH_TOKEN: op.adminToken, NO_COLOR: "1", ...env },
        cwd: dir,
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  const ok = async (args: string[], env: Record<string, string> = {}) => {
    const run = await cli(args, env);
    expect(run.code, `toolmesh ${args.join(" ")}\n${run.stderr}`).toBe(0);
    return run;
  };
  /** Retries a CLI run until `check` passes (state another process applies asynchronously). */
  const until = (args: string[], check: (run: Run) => boolean, env: Record<string, string> = {}) =>
    eventually(
      async () => {
        const run = await cli(args, env);
        if (!check(run)) throw new Error(`exit ${run.code}\n${run.stdout}\n${run.stderr}`);
        return run;
      },
      15_000,
      `toolmesh ${args.join(" ")}`,
      200,
    );

  beforeAll(async () => {
    backend = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const args = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ echoed: args.n ?? null }));
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
    op = await startOperatorStack();
    dir = op.dataDir;
    const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/echo`;
    await writeFile(
      path.join(dir, "tool.yaml"),
      [
        "name: cli.echo",
        "version: 1.0.0",
        "description: Echoes n back.",
        "inputSchema:",
        "  type: object",
        "  properties: {n: {type: integer}}",
        "idempotent: true",
        `runtime: {remote: {url: "${url}"}}`,
      ].join("\n"),
    );
  }, 180_000);
  afterAll(async () => {
    for (const child of children) child.kill();
    await op?.stop();
    backend?.close();
  });

  it("prints help and refuses usage mistakes with exit code 2", async () => {
    const help = await ok(["--help"]);
    expect(help.stdout).toContain("tools ls|get|register|update|enable|disable|rm");
    const sub = await ok(["keys", "create", "--help"]);
    expect(sub.stdout).toContain("Usage: toolmesh keys create --agent ID");
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const badJson = await cli(["call", "cli.echo", "{n:1"]);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain("the arguments are not JSON");
    const badFlag = await cli(["tools", "ls", "--colour"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("--colour");
  });

  it("reports every service SERVING and the tool agent's status", async () => {
    const run = await ok(["status", "--json"]);
    const status = JSON.parse(run.stdout) as {
      services: { service: string; status: string }[];
      system: { codingAgent: { concurrency: number }; model: { configured?: boolean } };
    };
    expect(status.services.map((s) => s.status)).toEqual(Array(6).fill("SERVING"));
    expect(status.system.codingAgent.concurrency).toBe(1);
    expect(status.system.model.configured).toBeUndefined();
    const text = (await ok(["status"])).stdout;
    expect(text).toMatch(/dispatcher\s+http:\/\/127\.0\.0\.1:\d+\s+SERVING/);
    expect(text).toMatch(/tool-agent\s+http:\/\/127\.0\.0\.1:\d+\s+SERVING/);
    expect(text).toMatch(/^tools: \d+ \(\d+ active, 0 deprecated, 0 disabled\)$/m);
    expect(text).toContain("CodingAgent: 0 running of 1, 0 queued");
    expect(text).toContain("model: none (set TOOLMESH_MODEL_URL on the tool agent)");
    expect(text).toContain("IM: off (TOOLMESH_IM_URL unset)");
  });

  it("shows a warm local tool's instances and the starts they saved in status", async () => {
    await writeFile(
      path.join(dir, "warm.yaml"),
      [
        "name: cli.warm",
        "description: Echoes its arguments with its pid.",
        "inputSchema: {type: object}",
        "runtime:",
        "  local:",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(httpToolScript)}]`,
        "    protocol: LOCAL_PROTOCOL_HTTP",
        "    minInstances: 1",
        "    maxInstances: 2",
      ].join("\n"),
    );
    await ok(["tools", "register", "-f", "warm.yaml"]);
    const run = await until(["status"], (r) => /#1 warm\s+RUNNING/.test(r.stdout));
    expect(run.stdout).toMatch(/LOCAL TOOL\s+STATE\s+INSTANCES\s+PID\s+PORT\s+RESTARTS/);
    expect(run.stdout).toMatch(/^cli\.warm\s+RUNNING\s+1\/2 min 1\s+\d+\s+\d+\s+0\s+0\s+0\s+0\s/m);
    const json = JSON.parse((await ok(["status", "--json"])).stdout) as {
      localTools: { tool: string; instances: { startedFor: string }[]; kind: string }[];
    };
    expect(json.localTools.find((t) => t.tool === "cli.warm")).toMatchObject({
      kind: "local",
      instances: [{ startedFor: "warm" }],
    });
  });

  it("registers, lists, shows and updates a tool from YAML", async () => {
    const reg = await ok(["tools", "register", "-f", "tool.yaml"]);
    expect(reg.stdout).toContain("registered cli.echo");
    const ls = JSON.parse((await ok(["tools", "ls", "--json"])).stdout) as {
      spec: { name: string };
    }[];
    expect(ls.map((t) => t.spec.name)).toContain("cli.echo");
    expect((await ok(["tools", "ls"])).stdout).toMatch(/cli\.echo\s+1\.0\.0\s+ACTIVE\s+remote/);
    expect((await ok(["tools", "get", "cli.echo"])).stdout).toContain(
      "description: Echoes n back.",
    );
    expect((await ok(["tools", "update", "-f", "tool.yaml"])).stdout).toMatch(
      /updated cli\.echo \(revision \d+\)/,
    );
    // An operator disables and enables it: its status alone changes.
    expect((await ok(["tools", "disable", "cli.echo"])).stdout).toMatch(
      /^disabled cli\.echo \(revision \d+\)$/m,
    );
    expect((await ok(["tools", "ls"])).stdout).toMatch(/cli\.echo\s+1\.0\.0\s+DISABLED/);
    expect((await ok(["tools", "enable", "cli.echo"])).stdout).toMatch(/^enabled cli\.echo/m);
    expect((await ok(["tools", "get", "cli.echo"])).stdout).toContain("status: TOOL_STATUS_ACTIVE");
    const missing = await cli(["tools", "get", "no.such"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("NOT_FOUND");
    const bad = await cli(["tools", "register", "-f", "nope.yaml"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("cannot read nope.yaml: ENOENT");
  });

  let secret = "";
  let keyId = "";
  it("creates a key and a grant, then the agent's call shows up live in tail", async () => {
    const key = JSON.parse(
      (await ok(["keys", "create", "--agent", "cli-bot", "--name", "test", "--json"])).stdout,
    );
    secret = key.secret;
    keyId = key.apiKey.id;
    expect(secret).toMatch(/^tmk_/);
    const grant = await ok([
      "grants",
      "add",
      "--agent",
      "cli-bot",
      "--tool",
      "cli.echo",
      "--scopes",
      "*",
    ]);
    expect(grant.stdout).toMatch(/granted \S+/);
    expect((await ok(["grants", "ls", "--agent", "cli-bot"])).stdout).toContain("tool:cli.echo");

    const tail = spawn(
      process.execPath,
      [bin, "tail", "--agent", "cli-bot", "--count", "1", "--json"],
      {
        env: { ...process.env, ...op.env, TOOLMESH_TOKEN: op.adminToken },
        cwd: dir,
      },
    );
    children.push(tail);
    const tailOut = new LineWatcher(tail.stdout);
    // Without a filter, tail follows every final status (a table line per outcome).
    const tailAll = spawn(process.execPath, [bin, "tail", "--count", "1"], {
      env: { ...process.env, ...op.env, TOOLMESH_TOKEN: op.adminToken, NO_COLOR: "1" },
      cwd: dir,
    });
    children.push(tailAll);
    const tailAllOut = new LineWatcher(tailAll.stdout);
    await Promise.all(
      [tail, tailAll].map((t) =>
        new LineWatcher(t.stderr).waitFor((l) => l.includes("watching outcomes"), 20_000, "tail"),
      ),
    );

    const call = await until(["call", "cli.echo", '{"n": 7}', "--json"], (r) => r.code === 0, {
      TOOLMESH_TOKEN: secret,
    });
    expect(call.code, call.stderr).toBe(0);
    const res = JSON.parse(call.stdout);
    expect(res).toMatchObject({ status: "CALL_STATUS_SUCCESS", output: { echoed: 7 } });
    const line = await tailOut.waitFor(
      (l) => l.includes(res.callId),
      15_000,
      "the outcome in tail",
    );
    expect(JSON.parse(line)).toMatchObject({
      tool: "cli.echo",
      agentId: "cli-bot",
      status: "CALL_STATUS_SUCCESS",
    });
    const tailed = await tailAllOut.waitFor(
      (l) => l.includes(res.callId),
      15_000,
      "tail, unfiltered",
    );
    expect(tailed).toMatch(/SUCCESS\s+cli\.echo\s+agent cli-bot/);

    const human = await ok(["call", "cli.echo", '{"n": 8}'], { TOOLMESH_TOKEN: secret });
    expect(human.stderr).toMatch(/^SUCCESS cli\.echo in \d+ ms/);
    expect(JSON.parse(human.stdout)).toEqual({ echoed: 8 });

    // The trace waterfall: execute, result and the callback, each with its offset.
    const trace = await until(["trace", res.traceId], (r) => r.stdout.includes("CALLBACK_SUCCESS"));
    expect(trace.stdout).toMatch(/\+0ms\s+TOOL_EXECUTE\s+cli\.echo\s+\|█/);
    expect(trace.stdout).toMatch(/TOOL_RESULT/);
    expect(trace.stderr).toContain(`trace ${res.traceId}:`);
  });

  it("shows the validation lines of a bad argument and exits 1", async () => {
    const run = await cli(["call", "cli.echo", '{"n": "seven"}'], { TOOLMESH_TOKEN: secret });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("INVALID_ARGUMENT");
    expect(run.stderr).toContain("- /n: must be integer");
  });

  it("runs a batch from a file", async () => {
    await writeFile(
      path.join(dir, "calls.yaml"),
      '- {tool: cli.echo, arguments: {n: 1}}\n- {tool: cli.echo, arguments: {n: "x"}}\n',
    );
    const run = await cli(["batch", "-f", "calls.yaml"], { TOOLMESH_TOKEN: secret });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/1\s+cli\.echo\s+SUCCESS/);
    expect(run.stdout).toMatch(/2\s+cli\.echo\s+REFUSED.*INVALID_ARGUMENT/);
  });

  it("lists the tool agent's tasks and shows one with its build log", async () => {
    const agents = createClient(
      AgentService,
      createGrpcTransport({ baseUrl: op.stack.service("dispatcher").url }),
    );
    const { task } = await agents.submitTask(
      { spec: { description: "Count the words of a text" } },
      { headers: { authorization: `Bearer ${op.adminToken}` } },
    );
    const id = task?.id ?? "";
    expect((await ok(["tasks", "ls"])).stdout).toMatch(
      new RegExp(`${id}\\s+PENDING\\s+admin\\s+\\S+\\s+-\\s+Count the words of a text`),
    );
    const shown = (await ok(["tasks", "get", id])).stdout;
    expect(shown).toContain(`task ${id}: PENDING`);
    expect(shown).toContain(`trace ${task?.traceId}`);
    expect(shown).toMatch(/ROUTER\s+-\s+queued by admin/);
    const bad = await cli(["tasks", "ls", "--status", "sleeping"]);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      'error: unknown status "sleeping"; use one of pending, running, succeeded, failed',
    ]);
  });

  it("turns a failing tool into a repair task with its failures attached", async () => {
    // Nothing listens at cli.broken's address: every call fails.
    const broken = (await readFile(path.join(dir, "tool.yaml"), "utf8"))
      .replace("name: cli.echo", "name: cli.broken")
      .replace(/url: "[^"]*"/, 'url: "http://127.0.0.1:1/"');
    await writeFile(path.join(dir, "broken.yaml"), broken);
    await ok(["tools", "register", "-f", "broken.yaml"]);
    await ok(["grants", "add", "--agent", "admin", "--tool", "cli.broken", "--scopes", "*"]);
    const failed: string[] = [];
    for (let i = 0; i < 2; i++) {
      const run = await until(["call", "cli.broken", "{}", "--json"], (r) =>
        r.stdout.includes("CALL_STATUS_FAILURE"),
      );
      failed.push(JSON.parse(run.stdout).callId);
    }
    await until(["audit", "query", "--tool", "cli.broken", "--json"], (r) =>
      failed.every((id) => r.stdout.includes(id)),
    );
    const made = await ok(["tasks", "repair", "cli.broken", "--json"]);
    const { taskId, failures } = JSON.parse(made.stdout);
    expect(failures).toBeGreaterThanOrEqual(2);
    const task = JSON.parse((await ok(["tasks", "get", taskId, "--json"])).stdout);
    expect(task.spec.description).toContain('Repair the tool "cli.broken"');
    for (const id of failed) expect(task.spec.description).toContain(id);
    expect(task.spec.description).toContain("backend_unavailable");
    const none = await cli(["tasks", "repair", "cli.echo"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain('tool "cli.echo" has no failure in the audit log');
  });

  it("queries the audit log and verifies its chain", async () => {
    const records = JSON.parse(
      (
        await until(["audit", "query", "--agent", "cli-bot", "--json"], (r) =>
          r.stdout.includes("cli.echo"),
        )
      ).stdout,
    ) as { tool: string; agentId: string }[];
    expect(records.length).toBeGreaterThanOrEqual(2);
    expect(records.every((r) => r.agentId === "cli-bot")).toBe(true);
    const verify = await ok(["audit", "verify"]);
    expect(verify.stdout).toMatch(/^intact: \d+ records checked/);
  });

  it("approves and denies held calls, and shows usage", async () => {
    const tool = (await readFile(path.join(dir, "tool.yaml"), "utf8"))
      .replace("name: cli.echo", "name: cli.pay")
      .concat("\nrequiresApproval: true\nprice: {currency: CREDITS, perCallMicros: 250000}\n");
    await writeFile(path.join(dir, "pay.yaml"), tool);
    await ok(["tools", "register", "-f", "pay.yaml"]);
    await ok(["grants", "add", "--agent", "cli-bot", "--tool", "cli.pay", "--scopes", "*"]);
    const hold = async (n: number) => {
      const run = await until(
        ["call", "cli.pay", `{"n": ${n}}`, "--json"],
        (r) => r.stdout.includes("CALL_STATUS_PENDING"),
        { TOOLMESH_TOKEN: secret },
      );
      expect(run.code).toBe(1);
      const res = JSON.parse(run.stdout) as { callId: string; error: { code: string } };
      expect(res.error.code).toBe("awaiting_approval");
      return res.callId;
    };
    const approved = await hold(7);
    const denied = await hold(8);
    // Unfiltered, tail follows REFUSED too: a denied held call is a final outcome.
    const tail = spawn(process.execPath, [bin, "tail"], {
      env: { ...process.env, ...op.env, TOOLMESH_TOKEN: op.adminToken, NO_COLOR: "1" },
      cwd: dir,
    });
    children.push(tail);
    const tailOut = new LineWatcher(tail.stdout);
    await new LineWatcher(tail.stderr).waitFor(
      (l) => l.includes("watching outcomes"),
      20_000,
      "tail",
    );
    const ls = await ok(["approvals", "ls", "--tool", "cli.pay"]);
    expect(ls.stdout).toContain(approved);
    expect(ls.stdout).toContain(denied);
    const approve = await ok(["approvals", "approve", approved, "--reason", "fine"]);
    expect(approve.stdout).toContain('"echoed": 7');
    expect(approve.stderr).toContain(`approved ${approved}: SUCCESS cli.pay`);
    const deny = await ok(["approvals", "deny", denied, "--reason", "not today"]);
    expect(deny.stderr).toContain(`denied ${denied}: REFUSED cli.pay`);
    expect(deny.stderr).toContain("approval_denied: call");
    const tailed = await tailOut.waitFor((l) => l.includes(denied), 15_000, "the denial in tail");
    expect(tailed).toMatch(/REFUSED\s+cli\.pay\s+agent cli-bot.*approval_denied$/);
    const again = await cli(["approvals", "deny", approved]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("NOT_FOUND");
    const usage = await until(["usage", "--tool", "cli.pay", "--json"], (r) =>
      r.stdout.includes('"calls": "2"'),
    );
    expect(JSON.parse(usage.stdout)).toMatchObject([
      {
        agentId: "cli-bot",
        tool: "cli.pay",
        calls: "2",
        errors: "1",
        refused: "1",
        // The approved call ran and cost its price; the denied one never ran.
        costMicros: { CREDITS: "250000" },
      },
    ]);
    expect((await ok(["usage", "--tool", "cli.pay"])).stdout).toMatch(
      /cli-bot\s+-\s+cli\.pay\s+2\s+1\s+0\s+0\s+1\s+\d+\s+0\.25 CREDITS/,
    );
  });

  it("revokes the key: the agent's next call is refused", async () => {
    expect((await ok(["keys", "ls", "--agent", "cli-bot"])).stdout).toContain(keyId);
    await ok(["keys", "revoke", keyId]);
    const refused = await until(["call", "cli.echo", "{}"], (r) => r.code === 1, {
      TOOLMESH_TOKEN: secret,
    });
    expect(refused.stderr).toContain("UNAUTHENTICATED");
    expect((await ok(["keys", "ls", "--agent", "cli-bot", "--all"])).stdout).toMatch(/revoked/);
  });

  it("writes and removes groups, grants and tools", async () => {
    await writeFile(
      path.join(dir, "group.yaml"),
      "name: cli-tools\ndescription: test group\ntools: [cli.echo]\n",
    );
    await ok(["groups", "put", "-f", "group.yaml"]);
    expect((await ok(["groups", "ls"])).stdout).toMatch(/cli-tools\s+cli\.echo/);
    await ok(["groups", "rm", "cli-tools"]);
    const grants = JSON.parse(
      (await ok(["grants", "ls", "--agent", "cli-bot", "--json"])).stdout,
    ) as { id: string }[];
    for (const g of grants) await ok(["grants", "revoke", g.id]);
    expect(JSON.parse((await ok(["grants", "ls", "--agent", "cli-bot", "--json"])).stdout)).toEqual(
      [],
    );
    expect((await ok(["tools", "rm", "cli.echo"])).stdout).toContain("removed cli.echo");
  });
});
