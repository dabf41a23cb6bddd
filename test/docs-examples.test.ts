import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CallStatus } from "@toolmesh/proto";
import {
  eventually,
  freePort,
  repoRoot,
  type ScriptedModel,
  startScriptedModel,
  startStack,
  type TestStack,
  tableGrantSpec,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBlocks, runnable } from "./docs-check/blocks.js";
import { pageScript } from "./docs-check/page-script.js";
import { runPage } from "./docs-check/run-page.js";

// The shell examples of README.md and docs/*.md, run as a reader runs them against `npm start`:
// every page's `sh` blocks in order in one bash, each command checked to succeed and each `# →`
// output checked for its status words and codes (test/docs-check/blocks.ts has the conventions).
// Pages share one stack, README.md first, so a page finds what the README's first call left:
// data.query registered, report-bot allowed data.* and its calls recorded.

const PAGES = [
  "README.md",
  ...(await readdir(path.join(repoRoot, "docs")))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The services the examples reach: the console and knowhub-sync have none run here. */
const SERVICES = [
  "permission",
  "registry",
  "dispatcher",
  "audit",
  "callback",
  "memory-writer",
  "tool-agent",
];

/** What the pages' default addresses are: the services' ports and the example backends. */
const DEFAULT_PORTS: Record<string, string> = {
  "7100": "dispatcher",
  "7101": "registry",
  "7102": "permission",
  "7103": "audit",
  "7104": "callback",
  "7106": "tool-agent",
  // The example backends: the weather service of cli.md's remote tool (and pay.send's).
  "8080": "examples",
};

/**
 * What of the repository a page's working directory links to (`npx tsx libs/sdk/…`). Not
 * node_modules or package.json: npm run in it would install into the repository.
 */
const FROM_REPO = ["libs", "services"];

describe("the shell examples of README.md and docs/*.md", () => {
  let stack: TestStack;
  let backends: http.Server;
  let workRoot: string;
  let env: Record<string, string>;
  let ports: Record<string, number>;
  let admin: { headers: { authorization: string } };
  let model: ScriptedModel | undefined;
  const timings: string[] = [];

  /** The one place where a page's default addresses become the test stack's. */
  const localise = (line: string) =>
    line.replace(/\b(?:127\.0\.0\.1|localhost):(\d{4})\b/g, (whole, port: string) => {
      const name = DEFAULT_PORTS[port];
      return name ? `127.0.0.1:${ports[name]}` : whole;
    });

  const newKey = async (agentId: string, roles: string[] = []) =>
    (
      await stack.permissionClient.createApiKey(
        { agentId, roles, name: "docs check" },
        stack.as(stack.adminToken),
      )
    ).secret;

  let paySend: Promise<void> | undefined;
  /** pay.send: a tool that needs approval, over the test's backend; report-bot may call it. */
  const registerPaySend = async () => {
    await stack.registryClient.registerTool(
      {
        tool: {
          name: "pay.send",
          description: "Pays an invoice.",
          requiredScopes: ["send:payments"],
          sideEffects: true,
          requiresApproval: true,
          inputSchema: { type: "object", properties: { invoice: { type: "string" } } },
          runtime: {
            kind: { case: "remote", value: { url: `http://127.0.0.1:${ports.examples}/pay` } },
          },
        },
      },
      admin,
    );
    const grant = { id: "pay", who: "agent:report-bot", on: "tool:pay.send", scopes: ["*"] };
    await stack.permissionClient.grant({ grant: tableGrantSpec(grant, Date.now()) }, admin);
  };

  /** The `NAME=…` values pages leave to the reader, as the check supplies them. */
  const supply: Record<string, () => Promise<string>> = {
    // An agent's API key: report-bot's, whom the README's first call allowed data.*.
    AGENT: () => newKey("report-bot"),
    // An approver's API key (its agent is the `decidedBy` services.md shows).
    APPROVER: () => newKey("boss", ["approver"]),
    // A call report-bot made of pay.send, held for approval.
    CALL: async () => {
      paySend ??= registerPaySend();
      await paySend;
      const agent = stack.as(await stack.agentToken("report-bot"));
      const held = await eventually(
        async () => {
          const res = await stack
            .dispatcherClient()
            .dispatch({ tool: "pay.send", arguments: { invoice: "A-17" } }, agent);
          if (res.status !== CallStatus.PENDING) throw new Error(`status ${res.status}`);
          return res;
        },
        10_000,
        "the Dispatcher to hold a pay.send call",
      );
      return held.callId;
    },
  };

  beforeAll(async () => {
    const started = Date.now();
    backends = http.createServer((req, res) => {
      req.resume();
      const body = req.url === "/weather" ? { temp_c: 3 } : req.url === "/pay" ? { paid: true } : 0;
      res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
      res.end(JSON.stringify(body || { error: `no ${req.url} here` }));
    });
    await new Promise<void>((resolve) => backends.listen(0, "127.0.0.1", resolve));
    // The Registry's port is chosen first: the Dispatcher writes ImportMcpServer's tools there.
    const registryPort = await freePort();
    // The tool agent's model, scripted for the pages' chat messages.
    model = await startScriptedModel([
      { match: "which tools read data?", turns: [{ text: "You may use data.query: …" }] },
      {
        match: "I need a tool that shouts a text",
        turns: [{ text: "Tell me what it takes and returns, and I file a task spec for it." }],
      },
    ]);
    stack = await startStack({
      services: SERVICES,
      serviceEnv: {
        registry: { TOOLMESH_REGISTRY_PORT: String(registryPort) },
        dispatcher: { TOOLMESH_REGISTRY_URL: `http://127.0.0.1:${registryPort}` },
        "tool-agent": { TOOLMESH_MODEL_URL: model.url, TOOLMESH_MODEL: "scripted-1" },
      },
    });
    admin = stack.as(stack.adminToken);
    ports = {
      ...Object.fromEntries(
        SERVICES.filter((s) => s !== "memory-writer").map((s) => [s, stack.service(s).port]),
      ),
      examples: (backends.address() as AddressInfo).port,
    };
    workRoot = await mkdtemp(path.join(tmpdir(), "toolmesh-docs-"));
    const inherited = Object.entries(process.env).filter(
      (e): e is [string, string] => e[1] !== undefined && !/^(TOOLMESH_|NATS_|OTEL_)/.test(e[0]),
    );
    const bin = path.join(repoRoot, "node_modules", ".bin");
    env = {
      ...Object.fromEntries(inherited),
      PATH: `${bin}:${process.env.PATH}`,
      NO_COLOR: "1",
      // As npm start's clients find it: the data directory, and each service's address.
      TOOLMESH_DATA_DIR: stack.dataDir,
      ...Object.fromEntries(
        ["dispatcher", "registry", "permission", "audit", "callback", "tool-agent"].map((s) => [
          `TOOLMESH_${s.toUpperCase().replace("-", "_")}_URL`,
          stack.service(s).url,
        ]),
      ),
      // No config file of the machine's user.
      XDG_CONFIG_HOME: path.join(workRoot, "config"),
      DOCS_CHECK_BIN: bin,
    };
    timings.push(`stack ${Date.now() - started} ms`);
  });

  afterAll(async () => {
    backends?.close();
    await stack?.stop();
    await model?.close();
    if (workRoot) await rm(workRoot, { recursive: true, force: true });
    process.stderr.write(`docs check: ${timings.join(", ")}\n`);
  });

  it.each(PAGES)(
    "%s runs as it shows",
    async (page) => {
      const blocks = readBlocks(page, await readFile(path.join(repoRoot, page), "utf8"));
      // A working directory like the repository's root, whose .toolmesh is the stack's data dir.
      const workDir = path.join(workRoot, page.replace(/\W/g, "-"));
      await mkdir(workDir);
      await symlink(stack.dataDir, path.join(workDir, ".toolmesh"));
      for (const entry of FROM_REPO)
        await symlink(path.join(repoRoot, entry), path.join(workDir, entry));
      const values: Record<string, string> = {};
      for (const name of pageScript(runnable(blocks), localise).placeholders) {
        const value = supply[name];
        if (value) values[name] = await value();
      }
      const run = await runPage({
        page,
        blocks,
        workDir,
        env: { ...env, ...values },
        localise,
        timeoutMs: 45_000,
      });
      timings.push(`${page} ${run.ms} ms`);
      expect(run.problems, run.problems.join("\n\n")).toEqual([]);
    },
    60_000,
  );
});
