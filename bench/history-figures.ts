import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { bucketNames } from "@toolmesh/nats";
import type { TestStack } from "@toolmesh/testkit";
import { backlogsDone } from "../test/history/backlogs.js";
import { archiveDirOf, auditIndexOf, historyAgent } from "../test/history/call-history.js";
import { perCallStreams } from "../test/history/read-history.js";
import type { StartFigures } from "../test/history/start-figures.js";
import { noopDispatch } from "./chain-client.js";
import { type Call, closedLoop } from "./closed-loop.js";
import { cpuMs, rssMb } from "./proc.js";

/** The services of a history stack: the call chain and every consumer of call records. */
export const HISTORY_SERVICES = [
  "permission",
  "registry",
  "dispatcher",
  "audit",
  "callback",
  "memory-writer",
];

/** CPU ms per call of each process, and the rate, at one concurrency. */
export interface RunFigures {
  concurrency: number;
  rps: number;
  calls: number;
  errors: number;
  cpuPerCall: Record<string, number>;
}

/** What a running stack holds and uses, read once it has settled after its start. */
export interface SizeFigures {
  /** Resident set of nats-server and each service. */
  rssMb: Record<string, number>;
  /** The NATS store on disk (allocated blocks). */
  storeBytes: number;
  /** JetStream's own count of bytes in each stream a call's records reach (STORE_STREAMS). */
  streamBytes: Record<string, number>;
  /** Distinct subjects in those streams: nats-server keeps an index entry for each. */
  subjects: number;
  memoryBytes: number;
  /** Audit's SQLite index (its file, WAL and shared memory). */
  auditIndexBytes: number;
  /** The audit archive's sealed segments. */
  archiveBytes: number;
}

/** Everything the history section reports of one stack. */
export interface StackFigures extends SizeFigures {
  /** The first restart after the stack ran (what an operator's restart is), and the best one. */
  firstStart: StartFigures;
  start: StartFigures;
  starts: number;
  runs: RunFigures[];
  /** nats-server's resident set after the runs. */
  natsRssAfterRunsMb: number;
}

/** A running stack under measurement: its data directory, agents and backend process. */
export interface Measured {
  stack: TestStack;
  dataDir: string;
  agents: number;
  backendPid: number;
}

/** Agents' tokens, one per agent of the shape, as gRPC metadata to rotate over. */
export async function agentMetadata(
  stack: TestStack,
  agents: number,
): Promise<() => grpc.Metadata> {
  const all: grpc.Metadata[] = [];
  for (let a = 0; a < agents; a++) {
    const m = new grpc.Metadata();
    m.set("authorization", `Bearer ${await stack.agentToken(historyAgent(a, agents))}`);
    all.push(m);
  }
  let next = 0;
  return () => all[next++ % all.length] as grpc.Metadata;
}

/** Makes `count` calls with `workers` callers at once. */
export async function dispatchCalls(call: Call, count: number, workers: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < count) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
}

const processesOf = (stack: TestStack) =>
  new Map<string, number>([
    ["nats-server", stack.nats.pid],
    ...HISTORY_SERVICES.map((name) => [name, stack.service(name).pid] as const),
  ]);

/** The streams that hold something of each call, in the order the bytes table lists them. */
export const STORE_STREAMS = [...perCallStreams, `KV_${bucketNames.usage}`];

/** RSS, store and stream sizes of a stack that has just started. */
export async function sizeFigures({ stack, dataDir }: Measured): Promise<SizeFigures> {
  const rss = Object.fromEntries([...processesOf(stack)].map(([name, pid]) => [name, rssMb(pid)]));
  const jsm = await stack.nc.jetstreamManager();
  const streamBytes: Record<string, number> = {};
  let subjects = 0;
  for (const name of STORE_STREAMS) {
    const { state } = await jsm.streams.info(name);
    streamBytes[name] = state.bytes;
    subjects += state.num_subjects ?? 0;
  }
  let auditIndexBytes = 0;
  for (const suffix of ["", "-wal", "-shm"])
    auditIndexBytes += await fileBytes(`${auditIndexOf(dataDir)}${suffix}`);
  return {
    rssMb: rss,
    storeBytes: await diskBytes(path.join(dataDir, "nats")),
    streamBytes,
    subjects,
    memoryBytes: await diskBytes(path.join(dataDir, "memory")),
    auditIndexBytes,
    archiveBytes: await diskBytes(archiveDirOf(dataDir)),
  };
}

/**
 * Closed-loop runs of `bench.noop` through each stack's Dispatcher, the stacks taking turns in
 * `rounds` slices per concurrency, so a machine whose load changes during the run weighs on both
 * alike. Each slice ends when every consumer has acked its calls, so their CPU counts: CPU ms
 * per call of every process, summed over the slices.
 */
export async function interleavedRuns(
  stacks: Measured[],
  concurrencies: number[],
  seconds: number,
  rounds: number,
): Promise<RunFigures[][]> {
  const prepared = await Promise.all(
    stacks.map(async (m) => ({
      m,
      call: noopDispatch(m.stack.dispatcherGrpcPort, await agentMetadata(m.stack, m.agents)),
      jsm: await m.stack.nc.jetstreamManager(),
      watched: new Map([
        ...processesOf(m.stack),
        ["backend", m.backendPid],
        ["client", process.pid],
      ]),
    })),
  );
  // JIT warm-up at the highest concurrency, as npm run bench does.
  for (const p of prepared) {
    await closedLoop("warm-up", p.call, 2000, Math.max(...concurrencies), false);
    await backlogsDone(p.jsm, undefined, p.m.dataDir);
  }
  const out: RunFigures[][] = stacks.map(() => []);
  for (const concurrency of concurrencies) {
    const totals = prepared.map(() => ({
      calls: 0,
      errors: 0,
      elapsed: 0,
      cpu: new Map<string, number>(),
    }));
    for (let round = 0; round < rounds; round++) {
      for (const [i, p] of prepared.entries()) {
        const total = totals[i] as (typeof totals)[number];
        const before = new Map([...p.watched].map(([name, pid]) => [name, cpuMs(pid)]));
        const run = await closedLoop(
          `history c${concurrency}`,
          p.call,
          (seconds * 1000) / rounds,
          concurrency,
          false,
        );
        await backlogsDone(p.jsm, undefined, p.m.dataDir);
        for (const [name, pid] of p.watched) {
          const used = cpuMs(pid) - (before.get(name) ?? 0);
          total.cpu.set(name, (total.cpu.get(name) ?? 0) + used);
        }
        total.calls += run.calls;
        total.errors += run.errors;
        total.elapsed += run.elapsed;
      }
    }
    for (const [i, total] of totals.entries()) {
      out[i]?.push({
        concurrency,
        rps: total.calls / total.elapsed,
        calls: total.calls,
        errors: total.errors,
        cpuPerCall: Object.fromEntries(
          [...total.cpu].map(([name, ms]) => [name, ms / Math.max(1, total.calls)]),
        ),
      });
    }
  }
  return out;
}

/** Bytes allocated on disk under a directory (what du counts). */
export async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const entry of entries) {
    if (entry.isFile()) total += await fileBytes(path.join(entry.parentPath, entry.name));
  }
  return total;
}

/** Bytes allocated on disk for a file; 0 when there is none. */
async function fileBytes(file: string): Promise<number> {
  return ((await stat(file).catch(() => undefined))?.blocks ?? 0) * 512;
}
