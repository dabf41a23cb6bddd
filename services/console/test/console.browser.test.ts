import { mkdir } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import {
  AgentService,
  CallbackService,
  CallStatus,
  DispatcherService,
  Effect,
  PermissionService,
  PrincipalKind,
  RegistryService,
  ResourceKind,
  ToolStatus,
} from "@toolmesh/proto";
import {
  allowSpec,
  eventually,
  failure,
  localHttpRuntime,
  type OperatorStack,
  repoRoot,
  startOperatorStack,
} from "@toolmesh/testkit";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, type TestBrowser } from "./browser.js";

const artifacts = path.join(repoRoot, "test-artifacts", "console");

// The console in a real browser (Debian's chromium driven by playwright-core) against the whole
// stack: sign in, make a call, open its trace waterfall, decide held calls, revoke a key.
// Screenshots are kept.
describe("web console in chromium", () => {
  let op: OperatorStack;
  let backend: http.Server;
  let browser: TestBrowser;
  let page: Page;
  let consoleUrl: string;
  let agentSecret: string;
  let agentKeyId: string;
  let dispatcher: Client<typeof DispatcherService>;
  let callback: Client<typeof CallbackService>;
  let permission: Client<typeof PermissionService>;
  const admin = () => ({ headers: { authorization: `Bearer ${op.adminToken}` } });
  const agent = () => ({ headers: { authorization: `Bearer ${agentSecret}` } });

  const shot = (name: string) =>
    page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    await mkdir(artifacts, { recursive: true });
    backend = http.createServer((req, res) => {
      req.resume();
      req.on("end", () =>
        res.writeHead(200, { "content-type": "application/json" }).end('{"greeting":"hello"}'),
      );
    });
    await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
    op = await startOperatorStack();
    consoleUrl = `http://127.0.0.1:${op.env.TOOLMESH_CONSOLE_PORT}`;
    const endpoint = (name: string) => op.stack.service(name).url;
    const registry = createClient(
      RegistryService,
      createGrpcTransport({ baseUrl: endpoint("registry") }),
    );
    permission = createClient(
      PermissionService,
      createGrpcTransport({ baseUrl: endpoint("permission") }),
    );
    dispatcher = createClient(
      DispatcherService,
      createGrpcTransport({ baseUrl: endpoint("dispatcher") }),
    );
    callback = createClient(
      CallbackService,
      createGrpcTransport({ baseUrl: endpoint("callback") }),
    );
    // web.approve is web.hello held for an approver's decision on every call.
    for (const [name, requiresApproval] of [
      ["web.hello", false],
      ["web.approve", true],
    ] as const) {
      await registry.registerTool(
        {
          tool: {
            name,
            version: "1.0.0",
            description: "Says hello.",
            inputSchema: { type: "object", properties: { name: { type: "string" } } },
            status: ToolStatus.ACTIVE,
            runtime: {
              kind: {
                case: "remote",
                value: { url: `http://127.0.0.1:${(backend.address() as AddressInfo).port}/` },
              },
            },
            requiresApproval,
          },
        },
        admin(),
      );
      for (const [kind, id] of [
        [PrincipalKind.ROLE, "admin"],
        [PrincipalKind.AGENT, "web-bot"],
      ] as const) {
        await permission.grant(
          {
            grant: {
              principal: { kind, id },
              resource: { kind: ResourceKind.TOOL, pattern: name },
              scopes: ["*"],
              effect: Effect.ALLOW,
              enabled: true,
            },
          },
          admin(),
        );
      }
    }
    // web.broken fails every call (nothing listens at its address): one failure opens its breaker.
    // Each call that reaches it costs 0.25 CREDITS.
    await registry.registerTool(
      {
        tool: {
          name: "web.broken",
          version: "1.0.0",
          description: "Always fails.",
          inputSchema: { type: "object" },
          status: ToolStatus.ACTIVE,
          runtime: { kind: { case: "remote", value: { url: "http://127.0.0.1:1/" } } },
          circuitBreaker: { failures: 1, openMs: 600_000 },
          price: { currency: "CREDITS", perCallMicros: 250_000n },
        },
      },
      admin(),
    );
    await permission.grant({ grant: allowSpec("role:admin", "tool:web.broken", ["*"]) }, admin());
    // web.warm is a local tool kept warm: one instance runs before any call.
    await registry.registerTool(
      {
        tool: {
          name: "web.warm",
          description: "Echoes its arguments with its pid.",
          inputSchema: { type: "object" },
          status: ToolStatus.ACTIVE,
          runtime: localHttpRuntime({ minInstances: 1, maxInstances: 2 }),
        },
      },
      admin(),
    );
    await permission.grant({ grant: allowSpec("role:admin", "tool:web.warm", ["*"]) }, admin());
    const key = await permission.createApiKey(
      { agentId: "web-bot", name: "browser test", roles: ["agent"] },
      admin(),
    );
    agentSecret = key.secret;
    agentKeyId = key.apiKey?.id ?? "";

    browser = await launchBrowser();
    page = browser.page;
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await op?.stop();
    backend?.close();
  });

  it("refuses a bad token and signs in with the admin token, keeping it out of the URL and localStorage", async () => {
    await page.goto(consoleUrl);
    await page.fill('input[name="token"]', "tmk_not_a_real_token");
    await page.click('button[type="submit"]');
    await page.waitForSelector(".signin .error");
    expect(await page.textContent(".signin .error")).toContain("UNAUTHENTICATED");

    await page.fill('input[name="token"]', op.adminToken);
    await page.click('button[type="submit"]');
    await page.waitForSelector("nav >> text=Live calls");
    await page.waitForSelector("h2 >> text=watching");
    expect(page.url()).not.toContain(op.adminToken);
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("toolmesh.token"),
      local: Object.keys(localStorage).length,
    }));
    expect(storage).toEqual({ session: op.adminToken, local: 0 });
    await shot("1-signed-in");
  });

  it("makes a call from the tools page and shows its result", async () => {
    await page.click("nav >> text=Tools & groups");
    await page.click("button.link >> text=web.hello");
    await page.fill('textarea[name="arguments"]', '{"name": "browser"}');
    await page.click("form.call button[type=submit]");
    await page.waitForSelector(".result .status.success");
    expect(await page.textContent(".result pre")).toContain('"greeting": "hello"');
    await shot("2-call");
  });

  it("shows a warm local tool's instances and the start its warm instance saved", async () => {
    await eventually(async () => {
      const status = await dispatcher.getRuntimeStatus({ tool: "web.warm" }, admin());
      expect(status.runtimes[0]?.instances[0]?.startedFor).toBe("warm");
    }, 20_000);
    expect((await dispatcher.dispatch({ tool: "web.warm" }, admin())).status).toBe(
      CallStatus.SUCCESS,
    );
    await page.click("nav >> text=Live calls");
    await page.click("nav >> text=Tools & groups");
    const tool = page.locator("table.runtimes tr.runtime", { hasText: "web.warm" });
    await tool.waitFor({ timeout: 15_000 });
    // running/max (min), pid, restarts, in flight, calls, starts saved.
    expect(await tool.locator("td").allTextContents()).toEqual([
      "web.warm",
      "RUNNING",
      "1/2 (min 1)",
      expect.stringMatching(/^\d+$/),
      "0",
      "0",
      "1",
      "1",
      "-",
    ]);
    const instance = page.locator("table.runtimes tr.instance", { hasText: "#1 warm" });
    expect(await instance.textContent()).toContain("RUNNING");
    await shot("2c-instances");
  });

  it("shows the circuit breaker of a failing tool on the tools page", async () => {
    const failed = await dispatcher.dispatch({ tool: "web.broken" }, admin());
    expect(failed.status).toBe(CallStatus.FAILURE);
    await page.click("nav >> text=Live calls");
    await page.click("nav >> text=Tools & groups");
    const row = page.locator("table.breakers tr", { hasText: "web.broken" });
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain("OPEN");
    expect(await row.textContent()).toContain("backend_unavailable");
    await shot("2b-breakers");
  });

  it("shows the cost of calls on the usage page", async () => {
    // Usage is counted from the audit log within a second or so: the page is opened until it shows.
    const row = page.locator("table.usage tr", { hasText: "web.broken" });
    await eventually(async () => {
      await page.click("nav >> text=Audit");
      await page.click("nav >> text=Usage");
      await row.waitFor({ timeout: 2000 });
    }, 20_000);
    expect(await row.textContent()).toContain("0.25 CREDITS");
    await shot("2c-usage");
  });

  it("shows an agent's call live and opens its trace waterfall", async () => {
    await page.click("nav >> text=Live calls");
    await page.waitForSelector("h2 >> text=watching");
    const res = await dispatcher.dispatch(
      { tool: "web.hello", arguments: { name: "agent" } },
      agent(),
    );
    const row = page.locator(`tr[data-call="${res.callId}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain("web-bot");
    await shot("3-live");
    await row.locator("a").click();
    await page.waitForSelector('.waterfall li[data-kind="CALLBACK_SUCCESS"]', { timeout: 15_000 });
    const kinds = await page.$$eval(".waterfall li", (rows) =>
      rows.map((r) => r.getAttribute("data-kind")),
    );
    expect(kinds[0]).toBe("TOOL_EXECUTE");
    expect(kinds).toEqual(
      expect.arrayContaining(["TOOL_EXECUTE", "TOOL_RESULT", "CALLBACK_SUCCESS"]),
    );
    expect(await page.textContent("h2")).toContain(res.traceId);
    await shot("4-trace-waterfall");
  });

  /** The call's outcome once it is final (Callback's GetOutcome, asked until it is). */
  const finalOutcome = (callId: string) =>
    eventually(async () => {
      const event = (await callback.getOutcome({ callId }, admin())).event;
      if (!event || event.status === CallStatus.PENDING)
        throw new Error(`call ${callId} is still ${event ? "PENDING" : "unknown"}`);
      return event;
    }, 15_000);

  it("lists an agent's held calls; the admin approves one, which runs, and denies another", async () => {
    await page.click("nav >> text=Approvals");
    await page.waitForSelector("h2 >> text=held");
    // The page is open before the calls are held: it finds them by itself.
    const [approved, denied] = await Promise.all(
      ["approve me", "deny me"].map((name) =>
        dispatcher.dispatch({ tool: "web.approve", arguments: { name } }, agent()),
      ),
    );
    for (const res of [approved, denied])
      expect([res.status, res.error?.code]).toEqual([CallStatus.PENDING, "awaiting_approval"]);
    const held = (callId: string) => page.locator(`table.approvals tr[data-call="${callId}"]`);
    await held(denied.callId).waitFor({ timeout: 15_000 });
    const row = await held(approved.callId).textContent();
    for (const text of ["web.approve", "web-bot", '"name":"approve me"', "the tool requires"])
      expect(row).toContain(text);
    await shot("7-approvals");

    await held(approved.callId).locator("button >> text=Approve").click();
    await held(approved.callId).waitFor({ state: "detached" });
    const decided = page.locator(`table.decided tr[data-call="${approved.callId}"]`);
    await decided.locator(".status.success").waitFor();
    const success = await finalOutcome(approved.callId);
    expect([success.status, success.output]).toEqual([CallStatus.SUCCESS, { greeting: "hello" }]);

    await held(denied.callId).locator('input[name="reason"]').fill("not this one");
    await held(denied.callId).locator("button >> text=Deny").click();
    await held(denied.callId).waitFor({ state: "detached" });
    await page.locator(`table.decided tr[data-call="${denied.callId}"] .status.refused`).waitFor();
    const refusal = await finalOutcome(denied.callId);
    expect([refusal.status, refusal.reason]).toEqual([CallStatus.REFUSED, "approval_denied"]);
    expect(refusal.error?.message).toContain("not this one");
    await shot("8-approvals-decided");

    await decided.locator("a").click();
    await page.waitForSelector('.waterfall li[data-kind="CALLBACK_SUCCESS"]', { timeout: 15_000 });
    expect(await page.textContent("h2")).toContain(approved.traceId);
  });

  it("shows the server's refusal when the admin would decide its own agent's call", async () => {
    const own = await dispatcher.dispatch({ tool: "web.approve" }, admin());
    expect(own.status).toBe(CallStatus.PENDING);
    await page.click("nav >> text=Approvals");
    const row = page.locator(`table.approvals tr[data-call="${own.callId}"]`);
    await row.locator("button >> text=Approve").click();
    await page.waitForSelector("section > .error");
    expect(await page.textContent("section > .error")).toBe(
      `PERMISSION_DENIED: call "${own.callId}" was made by agent "admin", which you are; another approver must decide it`,
    );
    await row.waitFor();
    await shot("9-approvals-own-call");
  });

  it("shows an auditor no held call to decide", async () => {
    const key = await permission.createApiKey(
      { agentId: "web-auditor", name: "browser test", roles: ["auditor"] },
      admin(),
    );
    const auditor = await browser.context.newPage();
    try {
      await auditor.goto(consoleUrl);
      await auditor.fill('input[name="token"]', key.secret);
      await auditor.click('button[type="submit"]');
      await auditor.click("nav >> text=Approvals");
      await auditor.waitForSelector("text=No held calls for you");
      expect(await auditor.locator("table.approvals tbody tr").count()).toBe(0);
      expect(await auditor.textContent("h2")).toContain("0 held");
      await auditor.screenshot({
        path: path.join(artifacts, "10-approvals-auditor.png"),
        fullPage: true,
      });
    } finally {
      await auditor.close();
    }
  });

  it("revokes an agent's key; the key stops working", async () => {
    await page.click("nav >> text=Keys & grants");
    const row = page.locator(`tr[data-key="${agentKeyId}"]`);
    await row.waitFor();
    await row.locator("button >> text=Revoke").click();
    await page.waitForSelector(`tr[data-key="${agentKeyId}"] td.state >> text=revoked`);
    await shot("5-key-revoked");
    const refused = await eventually(
      async () => {
        const error = await failure(dispatcher.dispatch({ tool: "web.hello" }, agent()));
        expect(error.code).toBe(Code.Unauthenticated);
        return error;
      },
      10_000,
      "the revoked key to be refused",
      100,
    );
    expect(refused.code).toBe(Code.Unauthenticated);
  });

  it("shows the tool agent's status and enables a tool it built", async () => {
    const agents = createClient(
      AgentService,
      createGrpcTransport({ baseUrl: op.stack.service("dispatcher").url }),
    );
    const { task } = await agents.submitTask(
      { spec: { description: "Say hello in Dutch", toolName: "web.dutch" } },
      admin(),
    );
    // As the tool agent registers what it built: disabled, labelled with its task.
    await createClient(
      RegistryService,
      createGrpcTransport({ baseUrl: op.stack.service("registry").url }),
    ).registerTool(
      {
        tool: {
          name: "web.dutch",
          description: "Says hello in Dutch.",
          inputSchema: { type: "object" },
          status: ToolStatus.DISABLED,
          labels: { "toolmesh.task": task?.id ?? "" },
          runtime: { kind: { case: "remote", value: { url: "http://127.0.0.1:9/" } } },
        },
      },
      admin(),
    );
    await page.click("nav >> text=Tool agent");
    await page.waitForSelector(`table.tasks >> text=Say hello in Dutch`);
    expect(await page.textContent("dl.facts")).toContain("none (TOOLMESH_MODEL_URL is unset)");
    expect(await page.textContent("dl.facts")).toMatch(/0 running of 1, 1 queued/);
    expect(await page.textContent("dd.im")).toBe("off");
    await page.click(`table.tasks button >> text=${task?.id.slice(0, 12)}`);
    await page.waitForSelector(".detail pre >> text=queued by admin");
    await shot("11-tool-agent");

    await page.click("nav >> text=Tools & groups");
    await page.click("button.link >> text=web.dutch");
    expect(await page.textContent(".status-switch")).toContain(
      `Built by the tool agent (task ${task?.id})`,
    );
    await page.click(".status-switch button >> text=Enable");
    await page.waitForSelector(".status-switch button >> text=Disable");
    const { tool } = await createClient(
      RegistryService,
      createGrpcTransport({ baseUrl: op.stack.service("registry").url }),
    ).getTool({ name: "web.dutch" }, admin());
    expect(tool?.spec?.status).toBe(ToolStatus.ACTIVE);
    await shot("12-tool-enabled");
  });

  it("shows every service SERVING and the audit chain intact", async () => {
    await page.click("nav >> text=Health");
    await page.waitForSelector("td >> text=callback");
    expect(await page.$$eval("table .status", (cells) => cells.map((c) => c.textContent))).toEqual(
      Array(6).fill("SERVING"),
    );
    await page.click("nav >> text=Audit");
    await page.waitForSelector("h2 .ok");
    expect(await page.textContent("h2 .ok")).toMatch(/chain intact/);
    await shot("6-audit");
  });
});
