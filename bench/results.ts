import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { streamNames } from "@toolmesh/nats";
import { repoRoot } from "@toolmesh/testkit";
import type { FsyncCount } from "./fsyncs.js";
import type { JetStreamFloor } from "./jetstream-floor.js";
import { latencyPlot } from "./plot.js";
import type { RatioRounds } from "./ratio-rounds.js";
import { writeResultsFile } from "./results-file.js";
import type { CallWrites } from "./stream-writes.js";
import type { ConsumerLag } from "./sustained.js";

/** One measured path at one concurrency. */
export interface Cell {
  name: string;
  concurrency: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU milliseconds per call of each process taking part, from /proc. */
  cpuPerCall: Record<string, number>;
  /** The largest resident memory of each process during the cell, in MB. */
  peakRssMb: Record<string, number>;
  /** What the cell's calls wrote to JetStream, for a path through the chain. */
  writes?: CallWrites;
}

/** A run of calls whose fsyncs on nats-server were counted. */
export interface FsyncRun {
  name: string;
  concurrency: number;
  count: FsyncCount;
}

/** How the run was made, for the results' header. */
export interface RunSettings {
  /** One acked JetStream write on this machine (bench/jetstream-floor.ts), 64 and 1 in flight. */
  floor: JetStreamFloor;
  floorOne: JetStreamFloor;
  /** fsyncs nats-server made per call on the default port, counted with strace (may be none). */
  fsyncs: FsyncRun[];
  /** The c1 and c64 figures again from alternating rounds (bench/ratio-rounds.ts), when run. */
  rounds: { c1: RatioRounds | undefined; c64: RatioRounds | undefined };
  /** The sustained run at the end and each consumer's lag after it. */
  sustained: { seconds: number; concurrency: number; calls: number; lag: ConsumerLag[] };
  seconds: number;
  warmupSeconds: number;
  jitWarmupSeconds: number;
  concurrencies: number[];
  /** The names of the baselines' and the chain's cells. */
  names: { echo: string; proxy: string; main: string; grpcJs: string };
}

/** Issue 25's targets for the chain, measured on the default port. */
const TARGET = {
  pathWrites: 3,
  proxyRatio: 0.5,
  addedP50Ms: 1.0,
  rssMb: 150,
};

const verdict = (met: boolean) => (met ? "met" : "**MISSED**");

/** Writes bench/results.md (table, targets, why) and bench/latency.svg, and prints the table. */
export async function writeResults(cells: Cell[], run: RunSettings): Promise<void> {
  const { seconds, warmupSeconds, jitWarmupSeconds, concurrencies, names } = run;
  const lines = [
    "# toolmesh benchmark",
    "",
    `${new Date().toISOString()} · ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}) · node ${process.version} · load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(
        " ",
      )} at the end (the machine is shared) · ${seconds} s per cell after ${warmupSeconds} s warm-up (each path first warmed ${jitWarmupSeconds} s at concurrency ${Math.max(...concurrencies)}), closed loop, one HTTP/2 connection per client · \`npm run bench:chain\``,
    "",
    "The chain: agent → Dispatcher (JWT auth, registry snapshot, ajv validation, grant decision, Invoke on a grpc backend running a no-op SDK tool (read-only: its start record waits up to TOOLMESH_START_LINGER_MS for its end and goes with it as one record), output validation, the record acked by JetStream) → reply. The records of concurrent calls share batch messages (group commit) on TOOLMESH_RECORDS; Audit chains them into the audit log, which Callback (broadcast, usage) and memory-writer follow, all running as under `npm start`. CPU per call counts every process until those consumers have acked the cell's calls.",
    "",
    "| path | concurrency | rps | p50 ms | p99 ms | × echo rps | × proxy rps | errors | CPU ms per call |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const cell of cells) {
    const base = find(cells, names.echo, cell.concurrency);
    const floor = find(cells, names.proxy, cell.concurrency);
    lines.push(
      `| ${cell.name} | ${cell.concurrency} | ${cell.rps.toFixed(0)} | ${cell.p50.toFixed(3)} | ${cell.p99.toFixed(3)} | ${base ? (cell.rps / base.rps).toFixed(2) : "-"} | ${floor ? (cell.rps / floor.rps).toFixed(2) : "-"} | ${cell.errors} | ${Object.entries(
        cell.cpuPerCall,
      )
        .filter(([, ms]) => ms >= 0.005)
        .map(([role, ms]) => `${role} ${ms.toFixed(3)}`)
        .join(", ")} |`,
    );
  }
  const sections = [
    "",
    "![p50 latency against concurrency](latency.svg)",
    ...targetSection(cells, names, run.rounds),
    ...writesSection(cells),
    ...fsyncSection(run.fsyncs),
    ...whySection(cells, run),
    ...floorSection(run, cells),
    ...memorySection(cells),
    ...lagSection(run),
  ];
  const text = `${[...lines, ...sections].join("\n")}\n`;
  await writeResultsFile(text);
  await writeFile(
    path.join(repoRoot, "bench", "latency.svg"),
    latencyPlot(
      [names.echo, names.proxy, names.main, names.grpcJs].map((name) => ({
        name,
        points: cells
          .filter((c) => c.name === name)
          .map((c) => ({ concurrency: c.concurrency, p50: c.p50 })),
      })),
    ),
  );
  process.stdout.write(text);
}

/** The chain cells with their writes counted. */
const chainCells = (cells: Cell[]) => cells.filter((c) => c.writes);

/** The largest peak RSS of a process over the chain's c64 cells. */
function peakAt64(cells: Cell[]): Map<string, number> {
  const peak = new Map<string, number>();
  for (const cell of chainCells(cells).filter((c) => c.concurrency === 64))
    for (const [role, mb] of Object.entries(cell.peakRssMb))
      peak.set(role, Math.max(peak.get(role) ?? 0, mb));
  return peak;
}

/** Issue 25's table: each figure on the default port, the grpc-js port beside it. */
function targetSection(
  cells: Cell[],
  names: RunSettings["names"],
  rounds: RunSettings["rounds"],
): string[] {
  const proxy1 = find(cells, names.proxy, 1);
  const proxy64 = find(cells, names.proxy, 64);
  const rows: string[] = [];
  const worst = chainCells(cells).reduce<Cell | undefined>(
    (w, c) => (!w || (c.writes?.pathWrites ?? 0) > (w.writes?.pathWrites ?? 0) ? c : w),
    undefined,
  );
  if (worst?.writes) {
    const at = (c: number) => find(cells, names.main, c)?.writes;
    const c1 = at(1);
    const c64 = at(64);
    rows.push(
      `| acked JetStream writes on a call's path (most of any chain cell: ${worst.name} c${worst.concurrency}); records in them | ${worst.writes.pathWrites.toFixed(2)} writes, ${worst.writes.records.toFixed(2)} records a call${c1 && c64 ? ` (default port: c1 ${c1.pathWrites.toFixed(2)} writes / ${c1.records.toFixed(2)} records, c64 ${c64.pathWrites.toFixed(3)} / ${c64.records.toFixed(2)})` : ""} | ≤ ${TARGET.pathWrites}: ${verdict(worst.writes.pathWrites <= TARGET.pathWrites)} |`,
    );
  }
  for (const name of [names.main, names.grpcJs]) {
    const c1 = find(cells, name, 1);
    const c64 = find(cells, name, 64);
    const main = name === names.main;
    if (main && rounds.c64) {
      const r = rounds.c64;
      const each = r.rounds.map((x) => (x.chainRps / x.proxyRps).toFixed(2)).join(", ");
      rows.push(
        `| chain ÷ raw grpc-js proxy at c64, ${name}: median of ${r.rounds.length} alternating ${r.seconds} s rounds | ${r.median.toFixed(2)}× (rounds: ${each}) | ≥ ${TARGET.proxyRatio}×: ${verdict(r.median >= TARGET.proxyRatio)} |`,
      );
    }
    if (c64 && proxy64) {
      const ratio = c64.rps / proxy64.rps;
      // With rounds, the cells' figure is shown beside them: two windows a minute apart.
      const judged = main && !rounds.c64;
      rows.push(
        `| chain ÷ raw grpc-js proxy at c64, ${name}${main && rounds.c64 ? ", from the c64 cells above" : ""} | ${ratio.toFixed(2)}× (${c64.rps.toFixed(0)} / ${proxy64.rps.toFixed(0)} rps) | ${judged ? `≥ ${TARGET.proxyRatio}×: ${verdict(ratio >= TARGET.proxyRatio)}` : ""} |`,
      );
    }
    if (main && rounds.c1) {
      const r = rounds.c1;
      const each = r.rounds.map((x) => (x.chainP50 - x.proxyP50).toFixed(3)).join(", ");
      rows.push(
        `| added p50 at c1 over the proxy, ${name}: median of ${r.rounds.length} alternating ${r.seconds} s rounds | ${r.addedP50.toFixed(3)} ms (rounds: ${each}) | ≤ ${TARGET.addedP50Ms.toFixed(1)} ms: ${verdict(r.addedP50 <= TARGET.addedP50Ms)} |`,
      );
    }
    if (c1 && proxy1) {
      const added = c1.p50 - proxy1.p50;
      const judged = main && !rounds.c1;
      rows.push(
        `| added p50 at c1 over the proxy, ${name}${main && rounds.c1 ? ", from the c1 cells above" : ""} | ${added.toFixed(3)} ms (${c1.p50.toFixed(3)} − ${proxy1.p50.toFixed(3)}) | ${judged ? `≤ ${TARGET.addedP50Ms.toFixed(1)} ms: ${verdict(added <= TARGET.addedP50Ms)}` : ""} |`,
      );
    }
  }
  const peak = peakAt64(cells);
  const dispatcher = peak.get("dispatcher");
  const callback = peak.get("callback");
  if (dispatcher !== undefined && callback !== undefined)
    rows.push(
      `| Dispatcher / Callback peak RSS at c64 | ${dispatcher.toFixed(0)} / ${callback.toFixed(0)} MB | < ${TARGET.rssMb} MB each: ${verdict(Math.max(dispatcher, callback) < TARGET.rssMb)} |`,
    );
  if (rows.length === 0) return [];
  return [
    "",
    "## Targets",
    "",
    "Issue 25's figures of the chain, from the cells above (the bytes a call takes are in the History section, the 8 MiB, watch and kill figures in their tests).",
    "",
    "| figure | measured | target |",
    "|---|---|---|",
    ...rows,
  ];
}

function find(cells: Cell[], name: string, c: number): Cell | undefined {
  return cells.find((x) => x.name === name && x.concurrency === c);
}

/** Short names of the streams a call writes to, for the writes table. */
const SHORT: Record<string, string> = {
  [streamNames.records]: "records",
  [streamNames.auditLog]: "audit log",
  [streamNames.callback]: "callback feed",
  "KV_toolmesh-usage": "usage",
};

function writesSection(cells: Cell[]): string[] {
  const chain = chainCells(cells);
  if (chain.length === 0) return [];
  const rows = chain.map((cell) => {
    const w = cell.writes as CallWrites;
    const all = Object.values(w.byStream).reduce((n, v) => n + v, 0);
    const by = Object.entries(w.byStream)
      .sort(([, a], [, b]) => b - a)
      .map(([name, n]) => `${SHORT[name] ?? name} ${n.toFixed(3)}`)
      .join(", ");
    return `| ${cell.name} | ${cell.concurrency} | ${w.calls} | ${w.pathWrites.toFixed(3)} | ${w.records.toFixed(2)} | ${(w.records / Math.max(w.pathWrites, 1e-9)).toFixed(1)} | ${all.toFixed(3)} | ${by} | ${w.logBytes.toFixed(0)} |`;
  });
  return [
    "",
    "## Writes a call costs",
    "",
    "Counted from nats-server: each stream's last sequence before and after a cell (the consumers done with its calls), divided by its calls. A message stored counts once, however many records it carries: a batch of the records of concurrent calls is one write and one fsync (group commit). On the call's path are the streams the Dispatcher writes (TOOLMESH_RECORDS and its buckets); the audit log blocks, broadcasts (an atomic batch's messages each count) and usage keys are written after the answer by Audit and Callback.",
    "",
    "| path | concurrency | calls | acked writes on the path a call | records a call | records a write | messages stored a call, every stream | by stream | audit log bytes a call |",
    "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ...rows,
  ];
}

function fsyncSection(runs: FsyncRun[]): string[] {
  if (runs.length === 0) return [];
  return [
    "",
    "### fsyncs a call",
    "",
    `What those writes cost the disk: the fsync and fdatasync calls nats-server made while ${runs[0]?.name ?? "the chain"} ran, counted with strace in runs of their own after the cells (strace stops nats-server at each one, so these runs are slower than the cells), divided by their calls, by the file synced. A stored message is one fsync of its stream's message block; a work-queue message acked by its consumer is removed, and the removal is synced too.`,
    "",
    "| concurrency | calls | fsyncs a call | by file |",
    "|---:|---:|---:|---|",
    ...runs.map(
      (r) =>
        `| ${r.concurrency} | ${r.count.calls} | ${r.count.total.toFixed(3)} | ${Object.entries(
          r.count.perCall,
        )
          .sort(([, a], [, b]) => b - a)
          .filter(([, n]) => n >= 0.0005)
          .map(([what, n]) => `${what} ${n.toFixed(3)}`)
          .join(", ")} |`,
    ),
  ];
}

function whySection(cells: Cell[], run: RunSettings): string[] {
  const { names } = run;
  const base64 = find(cells, names.echo, 64);
  const proxy64 = find(cells, names.proxy, 64);
  const proxy1 = find(cells, names.proxy, 1);
  const main64 = find(cells, names.main, 64);
  const main1 = find(cells, names.main, 1);
  const direct1 = find(cells, "backend Invoke, grpc-js client", 1);
  if (!base64 || !proxy64 || !proxy1 || !main64 || !main1 || !direct1) return [];
  const sum = (cell: Cell, skip: string[] = []) =>
    Object.entries(cell.cpuPerCall)
      .filter(([role]) => !skip.includes(role))
      .reduce((total, [, ms]) => total + ms, 0);
  const total = sum(main64);
  const proxyCpu = sum(proxy64);
  const top = Object.entries(main64.cpuPerCall)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 4)
    .map(([role, ms]) => `${role} ${ms.toFixed(3)}`)
    .join(", ");
  const writeMs = 1000 / run.floorOne.writesPerSecond;
  return [
    "",
    "## Why",
    "",
    `- Throughput: at c64 the chain's processes use ${((total * main64.rps) / 1000).toFixed(2)} of the machine's cores. The calls move in waves: ${main64.writes ? `${(main64.writes.records / main64.writes.pathWrites).toFixed(0)} records share each acked write, so` : ""} nearly every call in flight waits on the same record batch, and the client, the Dispatcher, the backend and nats-server take turns on each wave instead of overlapping, while the consumers (Audit, Callback, memory-writer) work on the wave before. So rps follows the CPU a call costs on that path, with the consumers' CPU competing for the cores. The proxy's calls cost ${proxyCpu.toFixed(3)} ms of CPU each (client, proxy, backend); the chain's on the default port ${total.toFixed(3)} ms (${top} …), so it reaches about ${(proxyCpu / total).toFixed(2)}× the proxy's rate by CPU alone; measured ${(main64.rps / proxy64.rps).toFixed(2)}×.`,
    latencyLine(main1, proxy1, direct1, writeMs, run),
  ];
}

/** What a call waits for at c1: the proxy's two hops, and its acked writes one after the other. */
function latencyLine(
  main1: Cell,
  proxy1: Cell,
  direct1: Cell,
  writeMs: number,
  run: RunSettings,
): string {
  const writes = main1.writes?.pathWrites ?? 2;
  return `- Latency at c1: the chain makes the proxy's two hops (agent → Dispatcher → backend) and ${writes.toFixed(2)} acked writes a call in turn. The no-op tool is read-only and ends within \`TOOLMESH_START_LINGER_MS\`, so its start record goes with its end record as one (one write; a call still running after the linger, or a tool with side effects, makes two in turn: its start's, then its end's) — ${writes.toFixed(2)} fsyncs at ${writeMs.toFixed(3)} ms each here at one in flight, ${(writes * writeMs).toFixed(3)} ms. The backend round trip alone is ${direct1.p50.toFixed(3)} ms at p50, the proxy's two hops ${proxy1.p50.toFixed(3)} ms, so the added p50 cannot go below those writes plus the Dispatcher's own work; measured ${(main1.p50 - proxy1.p50).toFixed(3)} ms.${diskLine(run, writeMs)}`;
}

/**
 * How busy the disk is at c1: every fsync nats-server makes for a call — its records and the
 * consumers' writes derived from them — takes about one acked write's time, and the call's own
 * wait behind whichever of the others is under way.
 */
function diskLine(run: RunSettings, writeMs: number): string {
  const c1 = run.fsyncs.find((f) => f.concurrency === 1);
  if (!c1) return "";
  return ` nats-server makes ${c1.count.total.toFixed(2)} fsyncs a call at c1 (its record, the broadcast, the log's share), about ${(c1.count.total * writeMs).toFixed(3)} ms of the disk's time a call, so a call's write often waits behind a consumer's.`;
}

function floorSection(run: RunSettings, cells: Cell[]): string[] {
  const { floor, floorOne } = run;
  const c64 = find(cells, run.names.main, 64);
  const all64 = c64?.writes
    ? Object.values(c64.writes.byStream).reduce((n, v) => n + v, 0)
    : undefined;
  return [
    "",
    "## The JetStream floor",
    "",
    `One acked JetStream write here, with the stack's nats-server settings (\`sync_interval: always\`: an fsync before every ack): ${floor.writesPerSecond.toFixed(0)} writes/s at 64 in flight over four streams, ${floor.natsCpuUsPerWrite.toFixed(0)} µs of nats-server CPU per write; ${floorOne.writesPerSecond.toFixed(0)} writes/s (${(1000 / floorOne.writesPerSecond).toFixed(3)} ms each) at one in flight.`,
    ...(c64?.writes && all64 !== undefined
      ? [
          `At c64 on the default port a call cost ${c64.writes.pathWrites.toFixed(3)} acked writes on its path and ${all64.toFixed(3)} messages stored in every stream together, so the disk alone would let the stack reach about ${(floor.writesPerSecond / all64).toFixed(0)} calls/s here; the chain measured ${c64.rps.toFixed(0)} calls/s (nats-server ${(c64.cpuPerCall.nats ?? 0).toFixed(3)} ms CPU per call).`,
        ]
      : []),
  ];
}

function memorySection(cells: Cell[]): string[] {
  const peak = peakAt64(cells);
  if (peak.size === 0) return [];
  const services = ["registry", "permission", "dispatcher", "audit", "callback", "memory-writer"];
  const rows = services
    .filter((s) => peak.has(s))
    .map((s) => {
      const mb = peak.get(s) ?? 0;
      return `| ${s} | ${mb.toFixed(0)} | ${verdict(mb < TARGET.rssMb)} |`;
    });
  const others = [...peak]
    .filter(([role]) => !services.includes(role))
    .map(([role, mb]) => `${role} ${mb.toFixed(0)} MB`)
    .join(", ");
  return [
    "",
    "## Memory during the c64 runs",
    "",
    `Peak RSS of each service while the chain ran at concurrency 64 and its consumers caught up (target < ${TARGET.rssMb} MB each). Others: ${others}.`,
    "",
    "| service | peak RSS MB | target |",
    "|---|---:|---|",
    ...rows,
  ];
}

function lagSection(run: RunSettings): string[] {
  const { seconds, concurrency, calls, lag } = run.sustained;
  if (lag.length === 0) return [];
  return [
    "",
    "## Consumers under chain load",
    "",
    `${seconds} s of calls at concurrency ${concurrency} through the Dispatcher's main port (${calls} calls, ${(calls / seconds).toFixed(0)}/s), then each consumer's lag when the load stopped — record batches not yet chained for Audit, audit log blocks not yet acked for Callback and memory-writer — and the time until it was zero (target: every lag zero within 5 s).`,
    "",
    "| consumer | lag at the end | zero after s | target |",
    "|---|---:|---:|---|",
    ...lag.map(
      (row) =>
        `| ${row.service} | ${row.lagAtEnd} | ${Number.isNaN(row.drainSeconds) ? "not within 120 s" : row.drainSeconds.toFixed(1)} | ${verdict(row.drainSeconds <= 5)} |`,
    ),
  ];
}
