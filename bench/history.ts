import { mkdtemp, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { backlogsDone, followersPastHistory } from "../test/history/backlogs.js";
import { writeCallHistory } from "../test/history/call-history.js";
import { bestStart, type StartFigures, timedStart } from "../test/history/start-figures.js";
import { noopDispatch, spawnScript } from "./chain-client.js";
import {
  agentMetadata,
  dispatchCalls,
  HISTORY_SERVICES,
  interleavedRuns,
  type Measured,
  type SizeFigures,
  type StackFigures,
  sizeFigures,
} from "./history-figures.js";
import { historySection, type ShapeResult } from "./history-report.js";
import { rssMb } from "./proc.js";
import { resultsFile, writeResultsFile } from "./results-file.js";

// npm run bench:history: does a stack with a long history start and run like a fresh one, and
// what does a call take on disk? For each shape (one agent; 1,000 agents) it grows a stack to N
// calls — most written straight into the audit log, its archive, the callback feed, usage and the
// memory files by the services' own mappings (test/history), the last ones through the
// Dispatcher — restarts it, and measures start-up, RSS, the bytes of every store and CPU per call
// beside a fresh stack measured the same way in the same run.
const N = Number(process.env.BENCH_HISTORY_CALLS ?? 1_000_000);
const THROUGH_DISPATCHER = Math.min(N, Number(process.env.BENCH_HISTORY_DISPATCHED ?? 10_000));
const SHAPES = (process.env.BENCH_HISTORY_AGENTS ?? "1,1000").split(",").map(Number);
const GROW_SYNC = process.env.BENCH_HISTORY_GROW_SYNC ?? "10s";
const RUN_SECONDS = Number(process.env.BENCH_HISTORY_RUN_SECONDS ?? 30);
/** Restarts of each stack; the best is reported, as load from others only ever adds time. */
const STARTS = Number(process.env.BENCH_HISTORY_STARTS ?? 3);
/** Slices each run is cut into, the two stacks taking turns. */
const ROUNDS = 3;
const CONCURRENCIES = [1, 64];
/**
 * Records in each generated audit log block (test/history HistoryShape.blockRecords): 2 is what
 * Audit's chain writer makes of 100 calls/s with its 20 ms linger (TOOLMESH_AUDIT_LINGER_MS), a
 * call that ends within TOOLMESH_AUDIT_MERGE_MS being one record.
 */
const BLOCK_RECORDS = Number(process.env.BENCH_HISTORY_BLOCK_RECORDS ?? 2);

const say = (line: string) => process.stdout.write(`${line}\n`);

/** A data directory with a stack's state: where it is and what it needs to start again. */
interface Grown {
  dataDir: string;
  jwtSecret: string;
  backend: Awaited<ReturnType<typeof spawnScript>>;
}

const start = (grown: Grown, sync: string) =>
  timedStart(grown.dataDir, HISTORY_SERVICES, {
    natsSyncInterval: sync,
    jwtSecret: grown.jwtSecret,
    startTimeoutMs: 600_000,
  });

/** A new data directory with the no-op backend registered and granted to every agent. */
async function newStack(sync: string) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-history-"));
  const { stack } = await timedStart(dataDir, HISTORY_SERVICES, {
    natsSyncInterval: sync,
    startTimeoutMs: 600_000,
  });
  const backend = await spawnScript("bench/noop-tool.ts", {
    TOOLMESH_REGISTRY_URL: stack.registry.url,
    TOOLMESH_TOOL_TOKEN: stack.adminToken,
  });
  // Also when a step fails: the backend outlives the stacks it serves.
  process.once("exit", () => backend.child.kill());
  await stack.grantAll("*");
  return { stack, grown: { dataDir, jwtSecret: stack.jwtSecret, backend } };
}

/** Grows a stack to N calls of `agents` agents, and stops it. */
async function growHistory(agents: number): Promise<Grown> {
  const { stack, grown } = await newStack(GROW_SYNC);
  for (const name of [...HISTORY_SERVICES].reverse()) await stack.service(name).stop();
  const direct = N - THROUGH_DISPATCHER;
  const began = performance.now();
  let reported = 0;
  await writeCallHistory(
    stack.nc,
    grown.dataDir,
    { calls: direct, agents, tool: "bench.noop", blockRecords: BLOCK_RECORDS },
    (n) => {
      if (n - reported < 100_000 && n < direct) return;
      reported = n;
      say(`  ${n} calls written (${Math.round(n / ((performance.now() - began) / 1000))}/s)`);
    },
  );
  await followersPastHistory(await stack.nc.jetstreamManager());
  await stack.stop();
  say(
    `  ${direct} calls written in ${((performance.now() - began) / 1000).toFixed(0)} s; starting the stack again (Audit indexes the new log blocks)`,
  );
  // A new start, on new free ports: a port kept across a long write may be taken meanwhile.
  const { stack: again } = await start(grown, GROW_SYNC);
  const call = noopDispatch(again.dispatcherGrpcPort, await agentMetadata(again, agents));
  await dispatchCalls(call, THROUGH_DISPATCHER, 64);
  await backlogsDone(await again.nc.jetstreamManager(), 1_800_000, grown.dataDir);
  await again.stop();
  say(
    `  ${THROUGH_DISPATCHER} calls through the Dispatcher; ${N} calls grown in ${((performance.now() - began) / 1000).toFixed(0)} s`,
  );
  return grown;
}

/**
 * Restarts the fresh and the grown stack in turn, STARTS times each, with fsync always; the last
 * starts stay up and are measured side by side.
 */
async function measureShape(agents: number): Promise<ShapeResult> {
  say(`${agents} agent(s): a fresh stack`);
  const freshNew = await newStack("always");
  await freshNew.stack.stop();
  say(`${agents} agent(s): a stack grown to ${N} calls`);
  const grown = await growHistory(agents);
  const dirs = [freshNew.grown, grown];
  const samples: StartFigures[][] = [[], []];
  const running: (Awaited<ReturnType<typeof start>> | undefined)[] = [undefined, undefined];
  try {
    for (let i = 0; i < STARTS; i++) {
      for (const [k, dir] of dirs.entries()) {
        await running[k]?.stack.stop();
        running[k] = await start(dir, "always");
        samples[k]?.push((running[k] as NonNullable<(typeof running)[number]>).figures);
      }
    }
    say(`  restarted ${STARTS} times each; measuring`);
    // Let start-up work that follows SERVING (first watches, consumer pulls) settle.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const measured: Measured[] = dirs.map((dir, k) => ({
      stack: (running[k] as NonNullable<(typeof running)[number]>).stack,
      dataDir: dir.dataDir,
      agents,
      backendPid: dir.backend.child.pid ?? 0,
    }));
    const sizes: SizeFigures[] = [];
    for (const m of measured) sizes.push(await sizeFigures(m));
    const runs = await interleavedRuns(measured, CONCURRENCIES, RUN_SECONDS, ROUNDS);
    const figures = measured.map(
      (m, k): StackFigures => ({
        ...(sizes[k] as SizeFigures),
        firstStart: (samples[k] as StartFigures[])[0] as StartFigures,
        start: bestStart(samples[k] as StartFigures[]),
        starts: STARTS,
        runs: runs[k] ?? [],
        natsRssAfterRunsMb: rssMb(m.stack.nats.pid),
      }),
    );
    return { agents, fresh: figures[0] as StackFigures, history: figures[1] as StackFigures };
  } finally {
    for (const r of running) await r?.stack.stop();
    for (const dir of dirs) {
      dir.backend.child.kill();
      await rm(dir.dataDir, { recursive: true, force: true });
    }
  }
}

say(
  `history: ${N} calls (${THROUGH_DISPATCHER} through the Dispatcher), shapes ${SHAPES.join(", ")} agents; ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`,
);
say(
  `The history is grown with nats-server at sync_interval ${GROW_SYNC}, ${BLOCK_RECORDS} record(s) a log block; every measured start and run is with sync_interval always.`,
);
const results: ShapeResult[] = [];
for (const agents of SHAPES) results.push(await measureShape(agents));
const section = historySection({
  calls: N,
  throughDispatcher: THROUGH_DISPATCHER,
  growSync: GROW_SYNC,
  runSeconds: RUN_SECONDS,
  starts: STARTS,
  blockRecords: BLOCK_RECORDS,
  results,
});
say(section);
await writeResultsFile(section);
say(`written to ${path.relative(process.cwd(), resultsFile)}`);
process.exit(0);
