import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CallStatus, TaskSupport } from "@toolmesh/proto";
import { eventually, repoRoot, startImportingStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveFixture } from "./fixture-server.js";
import { fixtureTools } from "./fixture-tools.js";

const cli = path.join(repoRoot, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const expectedFailures = path.join(import.meta.dirname, "expected-failures.yml");
/** Bound of one whole run of the suite (it runs each scenario with its own 10 s timeout). */
const RUN_TIMEOUT_MS = 150_000;

// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
// against /mcp, at each protocol revision's own wire version. The tools, resources and prompts
// it expects are an ordinary MCP server's (fixture-server.ts) imported into toolmesh, so every
// scenario runs through the chain and the `mcp` runtime. The suite's client sends no
// credential, so it reaches /mcp through a proxy that adds an agent's bearer token, as a
// client's own token store would; /mcp itself is served exactly as in production.
describe("MCP conformance suite against /mcp", () => {
  let stack: TestStack;
  let fixture: Awaited<ReturnType<typeof serveFixture>>;
  let proxy: http.Server;
  let proxyUrl: string;
  let outDir: string;
  let failed = false;

  beforeAll(async () => {
    [stack, fixture] = await Promise.all([startImportingStack(), serveFixture()]);
    const token = await stack.agentToken("conformance");
    await stack.grantAll("conformance");
    // The suite's tools, resources and prompts come from an imported MCP server, under their own
    // names: the suite exercises the federation path.
    await stack
      .dispatcherClient()
      .importMcpServer({ prefix: "", runtime: { url: fixture.url } }, stack.as(stack.adminToken));
    // A 2026-07-28 server lists no task support (the Tasks extension lets each server decide):
    // an operator marks the tools whose calls must be tasks, as it would a long-running tool.
    for (const tool of fixtureTools.filter((t) => t.taskSupport === "required")) {
      const { tool: imported } = await stack.registryClient.getTool(
        { name: tool.name },
        stack.as(stack.adminToken),
      );
      if (!imported?.spec) throw new Error(`${tool.name} was not imported`);
      await stack.registryClient.updateTool(
        { tool: { ...imported.spec, taskSupport: TaskSupport.REQUIRED } },
        stack.as(stack.adminToken),
      );
    }
    await eventually(
      () =>
        stack
          .dispatcherClient()
          .dispatch({ tool: "test_simple_text" }, stack.as(token))
          .then((res) => expect(res.status).toBe(CallStatus.SUCCESS)),
      30_000,
      "the Dispatcher to know the imported tools",
    );
    const target = new URL(stack.dispatcher.url);
    proxy = http.createServer((req, res) => {
      const upstream = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, authorization: `Bearer ${token}` },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
    outDir = await mkdtemp(path.join(tmpdir(), "toolmesh-conformance-"));
  });

  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await fixture?.close();
    await stack?.stop();
    // A failed run keeps its checks.json files for reading; a passing one leaves nothing behind.
    if (outDir && !failed) await rm(outDir, { recursive: true, force: true });
  });

  const run = (revision: string) =>
    new Promise<{ output: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          cli,
          "server",
          "--url",
          proxyUrl,
          "--requirements",
          revision,
          "--timeout",
          "10000",
          "-o",
          path.join(outDir, revision),
        ],
        { timeout: RUN_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
        (_error, stdout, stderr) => resolve({ output: `${stdout}\n${stderr}` }),
      );
    });

  for (const revision of ["2025-11-25", "2026-07-28"]) {
    it(
      `passes every scenario ${revision} requires, but those expected-failures.yml explains`,
      async () => {
        const { output } = await run(revision);
        const failures = await failingScenarios(path.join(outDir, revision));
        const expected = await expectedScenarios();
        const unexpected = [...failures.failing].filter((s) => !expected.has(s));
        const stale = [...expected].filter((s) => failures.ran.has(s) && !failures.failing.has(s));
        // The counts an issue's closing note gives, per revision.
        console.info(
          `conformance ${revision}: ${failures.ran.size - failures.failing.size} of ${failures.ran.size} scenarios passed, ${[...failures.failing].filter((s) => expected.has(s)).length} expected failures`,
        );
        if (unexpected.length > 0 || stale.length > 0 || failures.ran.size === 0) {
          failed = true;
          console.error(`${output}\nchecks of every scenario: ${path.join(outDir, revision)}`);
        }
        expect(failures.ran.size).toBeGreaterThan(10);
        expect({ unexpected, stale }).toEqual({ unexpected: [], stale: [] });
      },
      RUN_TIMEOUT_MS + 10_000,
    );
  }
});

/**
 * The scenarios of one run, and those with a FAILURE check. A WARNING (a SHOULD the suite
 * reports) does not fail a scenario here; the suite's own exit code counts some warnings on
 * some runs and not on others, so the test reads the checks it wrote instead.
 */
async function failingScenarios(dir: string): Promise<{ ran: Set<string>; failing: Set<string> }> {
  const ran = new Set<string>();
  const failing = new Set<string>();
  for (const entry of await readdir(dir).catch(() => [])) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario) continue;
    ran.add(scenario);
    const checks = JSON.parse(await readFile(path.join(dir, entry, "checks.json"), "utf8")) as {
      status: string;
    }[];
    if (checks.some((check) => check.status === "FAILURE")) failing.add(scenario);
  }
  return { ran, failing };
}

/** The scenario names of expected-failures.yml (its `  - name` lines). */
async function expectedScenarios(): Promise<Set<string>> {
  const text = await readFile(expectedFailures, "utf8");
  return new Set([...text.matchAll(/^ {2}- ([a-z0-9-]+)\s*$/gm)].map((m) => m[1] as string));
}
