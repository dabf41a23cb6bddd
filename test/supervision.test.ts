import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { type Code, ConnectError } from "@toolmesh/errors";
import {
  CallStatus,
  DispatcherService,
  Health,
  HealthCheckResponse_ServingStatus,
} from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import { chainServices, eventually, repoRoot, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import { serveRecordingTool } from "./recording-tool.js";

// `npm start` supervises every process: kill -9 of each kind under calls on one node, and the
// launcher starts it again at its address while the rest keep serving; each restart is counted
// in stack.json (what `toolmesh status` prints) and in the launcher's metrics.
const SERVICES = [...chainServices, "callback", "memory-writer", "tool-agent"];
const AGENT = "supervised-agent";
const TOOL = "supervised.write";
const CONCURRENCY = 4;
const execFileAsync = promisify(execFile);

interface Call {
  callId: string;
  startedAt: number;
  endedAt: number;
  ok: boolean;
  code?: Code;
}

let stack: TestStack;
let served: ServedTools;
const ran = new Set<string>();
const calls: Call[] = [];
let loadRunning = true;
let load: Promise<void>;

beforeAll(async () => {
  stack = await startStack({ services: SERVICES });
  await stack.grantAll(AGENT);
  served = await serveRecordingTool(stack, TOOL, ran);
  const as = stack.as(await stack.agentToken(AGENT));
  // One client at the Dispatcher's address for the whole test: a restart keeps it.
  const dispatcher = createClient(
    DispatcherService,
    createGrpcTransport({ baseUrl: stack.dispatcher.url }),
  );
  await eventually(
    async () => dispatcher.dispatch({ tool: TOOL, arguments: { n: -1 } }, as),
    30_000,
    "the Dispatcher to run the tool",
  );
  let n = 0;
  const worker = async () => {
    while (loadRunning) {
      const startedAt = Date.now();
      try {
        const res = await dispatcher.dispatch(
          { tool: TOOL, arguments: { n: n++ } },
          { ...as, timeoutMs: 10_000 },
        );
        const ok = res.status === CallStatus.SUCCESS;
        calls.push({ callId: res.callId, startedAt, endedAt: Date.now(), ok });
      } catch (error) {
        const code = ConnectError.from(error).code;
        calls.push({ callId: "", startedAt, endedAt: Date.now(), ok: false, code });
        // As a client backs off after a refusal, instead of spinning through failures.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  load = Promise.all(Array.from({ length: CONCURRENCY }, worker)).then(() => {});
}, 120_000);

afterAll(async () => {
  loadRunning = false;
  await load;
  await served?.close();
  await stack?.stop();
});

/** Kills a process with SIGKILL and resolves once the launcher has it SERVING again. */
async function killAndAwait(name: string) {
  const victim = stack.service(name);
  const { pid: killed, url } = victim;
  const killedAt = Date.now();
  process.kill(killed, "SIGKILL");
  const state = await eventually(
    async () => {
      const p = stack.stackFile().processes[name];
      if (!p?.pid || p.pid === killed) throw new Error(`${name} is not back yet`);
      return p;
    },
    30_000,
    `the launcher to restart ${name}`,
  );
  const backAt = Date.now();
  expect(victim.url).toBe(url);
  expect(state).toMatchObject({ pid: victim.pid, restarts: 1, lastExit: "signal SIGKILL" });
  if (url) {
    const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
    expect((await health.check({ service: "" })).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
  }
  const during = calls.filter((c) => c.endedAt >= killedAt && c.startedAt <= backAt);
  return { killedAt, backAt, during };
}

const auditor = async () =>
  stack.as(await stack.agentToken("supervised-auditor", { roles: ["auditor"] }));

describe("npm start's supervision on one node, under calls", () => {
  for (const name of [
    "registry",
    "permission",
    "audit",
    "callback",
    "memory-writer",
    "tool-agent",
  ]) {
    it(`restarts a killed ${name} while calls through the Dispatcher keep succeeding`, async () => {
      const { during } = await killAndAwait(name);
      expect(during.length).toBeGreaterThan(0);
      expect(during.filter((c) => !c.ok)).toEqual([]);
      // What it missed while down, it catches up on (the consumers of the records resume).
      const missed = during.at(-1)?.callId as string;
      if (name === "audit") {
        const as = await auditor();
        await eventually(async () => {
          const res = await stack.auditClient().queryRecords({ callId: missed }, as);
          expect(res.records.length).toBeGreaterThan(0);
        }, 20_000);
      }
      if (name === "callback") {
        const as = stack.as(await stack.agentToken(AGENT));
        await eventually(async () => {
          const res = await stack.callbackClient().getOutcome({ callId: missed }, as);
          expect(res.event?.status).toBe(CallStatus.SUCCESS);
        }, 20_000);
      }
      if (name === "memory-writer") {
        await eventually(
          async () => expect(await readAgentMemory(stack.dataDir, AGENT)).toContain(missed),
          20_000,
        );
      }
    });
  }

  it("restarts a killed Dispatcher at its address; calls succeed again once it is SERVING", async () => {
    const { killedAt, backAt } = await killAndAwait("dispatcher");
    const back = stack.launcherLines.find((l) => l.startsWith("dispatcher is back"));
    console.info(`dispatcher: kill -9 to SERVING in ${backAt - killedAt} ms (launcher: ${back})`);
    expect(stack.launcherLines).toContainEqual(
      expect.stringMatching(
        /^dispatcher exited \(signal SIGKILL\); restarting it in \d+ ms \(restart 1 of at most 5 within 60 s\)/,
      ),
    );
    const after = calls.length;
    await eventually(async () => expect(calls.length).toBeGreaterThan(after + 20), 20_000);
    // Calls failed only while the one Dispatcher was down; every other kill cost none.
    const failed = calls.filter((c) => !c.ok);
    expect(failed.length).toBeGreaterThan(0);
    for (const c of failed) {
      expect(c.endedAt).toBeGreaterThanOrEqual(killedAt);
      expect(c.startedAt).toBeLessThanOrEqual(backAt);
    }
    expect(calls.filter((c) => c.startedAt > backAt).every((c) => c.ok)).toBe(true);
  });

  it("shows every restart in `toolmesh status` and the launcher's metrics", async () => {
    const urls = Object.fromEntries(
      ["dispatcher", "registry", "permission", "audit", "callback", "tool-agent"].map((s) => [
        `TOOLMESH_${s.toUpperCase().replace("-", "_")}_URL`,
        stack.service(s).url,
      ]),
    );
    const env = {
      ...process.env,
      ...urls,
      TOOLMESH_DATA_DIR: stack.dataDir,
      TOOLMESH_TOKEN: stack.adminToken,
      NO_COLOR: "1",
    };
    const bin = path.join(repoRoot, "libs/cli/bin/toolmesh.mjs");
    const json = JSON.parse(
      (await execFileAsync(process.execPath, [bin, "status", "--json"], { env })).stdout,
    ) as { processes: { process: string; restarts: number; lastRestartAt?: string }[] };
    for (const name of SERVICES) {
      const row = json.processes.find((p) => p.process === name);
      expect(row, name).toMatchObject({ restarts: 1, lastRestartAt: expect.any(String) });
    }
    expect(json.processes.find((p) => p.process === "nats-server")?.restarts).toBe(0);
    const text = (await execFileAsync(process.execPath, [bin, "status"], { env })).stdout;
    expect(text).toMatch(/PROCESS\s+PID\s+RESTARTS\s+LAST RESTART\s+LAST EXIT/);
    expect(text).toMatch(/dispatcher\s+\d+\s+1\s+\d{4}-\d\d-\d\dT[\d:]+Z\s+signal SIGKILL/);

    const metrics = await (await fetch(stack.launcherMetricsUrl)).text();
    for (const name of SERVICES) {
      expect(metrics).toContain(`toolmesh_launcher_restarts_total{process="${name}"} 1`);
    }
  });
});
