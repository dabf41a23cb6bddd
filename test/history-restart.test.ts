import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { listSegments } from "@toolmesh/archive";
import { AuditAction, CallStatus } from "@toolmesh/proto";
import { startsCall } from "@toolmesh/records";
import { defineTool, type ServedTools, serveTools } from "@toolmesh/sdk";
import { chainServices, eventually, type TestStack } from "@toolmesh/testkit";
import { AckPolicy } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexStart } from "../services/audit/src/index-follower.js";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import { backlogsDone, followersPastHistory } from "./history/backlogs.js";
import { archiveDirOf, historyAgent, writeCallHistory } from "./history/call-history.js";
import { type HistoryRead, readHistoryOnce } from "./history/read-history.js";
import { bestStart, type StartFigures, timedStart } from "./history/start-figures.js";

const CALLS = 100_000;
const TOOL = "history.count";
const AGENT = historyAgent(0, 1);
const SERVICES = [...chainServices, "callback", "memory-writer"];
// The history is written in bulk; fsync on every write would make that take minutes. Both the
// fresh start and the restart compared run with the same setting.
const SYNC_INTERVAL = "1s";

/** Starts the stack on the test's data directory, the history written with fsync relaxed. */
const start = (dataDir: string, jwtSecret?: string) =>
  timedStart(dataDir, SERVICES, {
    natsSyncInterval: SYNC_INTERVAL,
    ...(jwtSecret ? { jwtSecret } : {}),
  });

// "Day 30 like day 1": a stack with 100,000 calls of one agent behind it restarts like a fresh
// one, and each consumer resumes after its history instead of reading it. Most of the history is
// written straight into the audit log (sealed in its archive), the callback feed, usage and the
// memory files by the services' own mappings (test/history); the calls after the restart go
// through the Dispatcher.
describe(`a stack restarted after ${CALLS} calls`, () => {
  let dataDir: string;
  let stack: TestStack | undefined;
  let served: ServedTools | undefined;
  let fresh: StartFigures;
  let restarted: StartFigures;
  /** Reading every per-call stream once, and reading one stream of one message per call. */
  let historyRead: HistoryRead;
  let oneStreamRead: HistoryRead;

  const call = async (n: number) => {
    const s = stack as TestStack;
    const res = await s
      .dispatcherClient()
      .dispatch({ tool: TOOL, arguments: { n } }, s.as(await s.agentToken(AGENT)));
    expect(res.status).toBe(CallStatus.SUCCESS);
    return res;
  };

  /** The ids of the agent's memory entries, oldest first. */
  const memoryIds = async () =>
    (await readAgentMemory(dataDir, AGENT))
      .split("\n")
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { id: string }).id);

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-history-"));
    // Fresh: the first start on an empty data directory, and a restart of it still empty.
    const freshSamples: StartFigures[] = [];
    let started = await start(dataDir);
    const jwtSecret = started.stack.jwtSecret;
    freshSamples.push(started.figures);
    await started.stack.stop();
    started = await start(dataDir, jwtSecret);
    freshSamples.push(started.figures);
    stack = started.stack;
    fresh = bestStart(freshSamples);
    served = await serveTools(
      [
        defineTool({
          name: TOOL,
          description: "Returns its number.",
          inputSchema: { type: "object", properties: { n: { type: "integer" } } },
          handler: (args: { n?: number }) => ({ n: args.n ?? 0 }),
        }),
      ],
      { registry: { url: stack.registry.url, token: stack.adminToken } },
    );
    await stack.grantAll(AGENT);

    for (const name of [...SERVICES].reverse()) await stack.service(name).stop();
    await writeCallHistory(stack.nc, dataDir, { calls: CALLS, agents: 1, tool: TOOL });
    const js = stack.nc.jetstream();
    const jsm = await stack.nc.jetstreamManager();
    await followersPastHistory(jsm);
    historyRead = await readHistoryOnce(js, jsm);
    oneStreamRead = await readHistoryOnce(js, jsm, ["TOOLMESH_AUDIT_LOG"]);
    // The history is older than a segment's age: it is sealed in the archive, as a stack that ran
    // it would have sealed it.
    const logEnd = (await jsm.streams.info("TOOLMESH_AUDIT_LOG")).state.last_seq;
    expect((await listSegments(archiveDirOf(dataDir))).at(-1)?.lastStreamSeq).toBe(logEnd);
    // The stack as it ran: Audit's index took the records in as they came. A new start, on new
    // free ports: a port kept across the long write may have been taken meanwhile.
    await stack.stop();
    stack = (await start(dataDir, jwtSecret)).stack;
    await call(-1);
    await backlogsDone(await stack.nc.jetstreamManager(), 120_000, dataDir);
    await stack.stop();
    stack = undefined;

    const restartSamples: StartFigures[] = [];
    for (let i = 0; i < 2; i++) {
      await stack?.stop();
      started = await start(dataDir, jwtSecret);
      stack = started.stack;
      restartSamples.push(started.figures);
    }
    restarted = bestStart(restartSamples);
  }, 240_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("starts like a fresh stack: less time than reading its history, less CPU than reading one record a call", async () => {
    const report = JSON.stringify({ fresh, restarted, historyRead, oneStreamRead });
    // If reading the history were quick, the comparisons below would say nothing: a block in the
    // log a call, its start and end chained as one record (the feed keeps nothing without a
    // durable that replays it).
    expect(historyRead.messages, report).toBeGreaterThanOrEqual(CALLS);
    expect(oneStreamRead.messages, report).toBeGreaterThanOrEqual(CALLS);
    expect(restarted.stackMs - fresh.stackMs, report).toBeLessThan(historyRead.ms);
    // CPU, unlike wall time, does not grow with the machine's load: any service that read one
    // message per call of its history at start would spend at least this much more.
    for (const [name, cpu] of Object.entries(restarted.cpuMs)) {
      expect(cpu - (fresh.cpuMs[name] ?? 0), `${name}: ${report}`).toBeLessThan(
        oneStreamRead.cpuMs,
      );
    }
    await call(1);
  });

  it("Audit opens its index at the checkpoint and chains on after the history", async () => {
    const s = stack as TestStack;
    const opened = JSON.parse(
      await s
        .service("audit")
        .stdout.waitFor((l) => l.includes('"msg":"audit index opened"'), 1000, "the index line"),
    ) as IndexStart;
    expect(opened).toMatchObject({ rebuilt: false, readAtStart: 0 });
    expect(opened.targetSeq).toBeGreaterThan(CALLS);
    const res = await call(2);
    const auditor = s.as(await s.agentToken("reviewer", { roles: ["auditor"] }));
    const audit = s.auditClient();
    // Its end (with its start's fields: Audit chains a call that ends soon as one record),
    // chained after the history's record a call.
    const found = await eventually(async () => {
      const records = (await audit.queryRecords({ callId: res.callId }, auditor)).records;
      expect(records.map((r) => [r.action, startsCall(r)])).toEqual([
        [AuditAction.TOOL_CALL, true],
      ]);
      return records;
    }, 30_000);
    for (const record of found) expect(Number(record.sequence)).toBeGreaterThan(CALLS);
    const verified = await audit.verifyChain({ fromSequence: BigInt(CALLS - 100) }, auditor);
    expect(verified.ok).toBe(true);
    // The history is still answered from the index.
    const old = await audit.queryRecords({ agentId: AGENT, pageSize: 10 }, auditor);
    expect(old.records).toHaveLength(10);
  });

  it("Callback broadcasts only the outcomes that came after the history", async () => {
    const s = stack as TestStack;
    const jsm = await s.nc.jetstreamManager();
    // A subscriber that starts replaying the feed now sees the new call's broadcast alone.
    await jsm.consumers.add("TOOLMESH_CALLBACK", {
      durable_name: "after-history",
      ack_policy: AckPolicy.Explicit,
    });
    const res = await call(3);
    await backlogsDone(jsm, 30_000);
    const replay = await s.nc.jetstream().consumers.get("TOOLMESH_CALLBACK", "after-history");
    const first = await replay.next({ expires: 5000 });
    expect(first?.headers?.get("Nats-Msg-Id")).toBe(`${res.callId}/${AuditAction.TOOL_CALL}`);
    await first?.ackAck();
    expect((await jsm.consumers.info("TOOLMESH_CALLBACK", "after-history")).num_pending).toBe(0);
    const outcome = await s
      .callbackClient()
      .getOutcome({ callId: res.callId }, s.as(await s.agentToken(AGENT)));
    expect(outcome.event?.status).toBe(CallStatus.SUCCESS);
  });

  it("memory-writer appends after the history without writing any of it again", async () => {
    const s = stack as TestStack;
    // The active replica opens the files once it holds the writers' lease, and says what it found.
    const opened = await s
      .service("memory-writer")
      .stdout.waitFor((l) => l.includes('"msg":"memory files opened"'), 30_000, "the files opened");
    expect(JSON.parse(opened)).toMatchObject({ agents: 1, repaired: 0 });
    const jsm = await s.nc.jetstreamManager();
    await backlogsDone(jsm, 30_000);
    const before = await memoryIds();
    const res = await call(4);
    await backlogsDone(jsm, 30_000);
    const after = await memoryIds();
    expect(before.length).toBeGreaterThan(2 * CALLS);
    expect(after).toEqual([...before, res.callId, `${res.callId}/result`]);
    expect(new Set(after).size).toBe(after.length);
  });
});
