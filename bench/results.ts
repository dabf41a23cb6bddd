import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "@toolmesh/testkit";
import type { JetStreamFloor } from "./jetstream-floor.js";
import { latencyPlot } from "./plot.js";
import { writeResultsFile } from "./results-file.js";
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
}

/** How the run was made, for the results' header. */
export interface RunSettings {
  /** One acked JetStream write on this machine (bench/jetstream-floor.ts). */
  floor: JetStreamFloor;
  /** The sustained run at the end and each consumer's lag after it. */
  sustained: { seconds: number; concurrency: number; calls: number; lag: ConsumerLag[] };
  seconds: number;
  warmupSeconds: number;
  jitWarmupSeconds: number;
  concurrencies: number[];
  /** The name of the proxy baseline's cells. */
  proxy: string;
}

/** Writes bench/results.md (table, targets, why) and bench/latency.svg, and prints the table. */
export async function writeResults(cells: Cell[], run: RunSettings): Promise<void> {
  const { seconds, warmupSeconds, jitWarmupSeconds, concurrencies, proxy: PROXY } = run;
  const find = (name: string, c: number) =>
    cells.find((x) => x.name === name && x.concurrency === c);
  const lines = [
    "# toolmesh benchmark",
    "",
    `${new Date().toISOString()} · ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}) · node ${process.version} · ${seconds} s per cell after ${warmupSeconds} s warm-up (each path first warmed ${jitWarmupSeconds} s at concurrency ${Math.max(...concurrencies)}), closed loop, one HTTP/2 connection per client`,
    "",
    "The chain: agent → Dispatcher (JWT auth, registry snapshot, ajv validation, grant decision, TOOL_EXECUTE, Invoke on a grpc backend running a no-op SDK tool, output validation, TOOL_RESULT + audit record + outcome acked by JetStream) → reply.",
    "",
    "| path | concurrency | rps | p50 ms | p99 ms | × echo rps | × proxy rps | errors | CPU ms per call |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const cell of cells) {
    const base = find("baseline: grpc-js echo", cell.concurrency);
    const floor = find(PROXY, cell.concurrency);
    lines.push(
      `| ${cell.name} | ${cell.concurrency} | ${cell.rps.toFixed(0)} | ${cell.p50.toFixed(3)} | ${cell.p99.toFixed(3)} | ${base ? (cell.rps / base.rps).toFixed(2) : "-"} | ${floor ? (cell.rps / floor.rps).toFixed(2) : "-"} | ${cell.errors} | ${Object.entries(
        cell.cpuPerCall,
      )
        .filter(([, ms]) => ms >= 0.005)
        .map(([role, ms]) => `${role} ${ms.toFixed(3)}`)
        .join(", ")} |`,
    );
  }
  const base1 = find("baseline: grpc-js echo", 1);
  const base64 = find("baseline: grpc-js echo", 64);
  const proxy1 = find(PROXY, 1);
  const proxy64 = find(PROXY, 64);
  const targets: string[] = [
    "",
    "![p50 latency against concurrency](latency.svg)",
    "",
    "## Targets",
    "",
  ];
  for (const name of ["chain via main port (connect-node)", "chain via grpc-js port"]) {
    const c1 = find(name, 1);
    const c64 = find(name, 64);
    if (!c1 || !c64 || !proxy1 || !proxy64) continue;
    const ratio = c64.rps / proxy64.rps;
    const added = c1.p50 - proxy1.p50;
    targets.push(
      `- ${name}: throughput at c64 = ${ratio.toFixed(2)}× the proxy (target ≥ 0.75: ${ratio >= 0.75 ? "met" : "MISSED"}); added p50 at c1 over the proxy = ${added.toFixed(3)} ms (target ≤ 0.6 ms: ${added <= 0.6 ? "met" : "MISSED"})`,
    );
  }
  for (const name of ["chain via grpc-js port", "chain via main port (connect-node)"]) {
    const c1 = find(name, 1);
    const c64 = find(name, 64);
    if (!c1 || !c64 || !base1 || !base64) continue;
    const ratio = c64.rps / base64.rps;
    const added = c1.p50 - base1.p50;
    targets.push(
      `- ${name}: throughput at c64 = ${ratio.toFixed(2)}× echo (target ≥ 0.50: ${ratio >= 0.5 ? "met" : "MISSED"}); added p50 at c1 = ${added.toFixed(3)} ms (target < 1 ms: ${added < 1 ? "met" : "MISSED"})`,
    );
  }
  const fast64 = find("chain via grpc-js port", 64);
  const fast1 = find("chain via grpc-js port", 1);
  const direct1 = find("backend Invoke, grpc-js client", 1);
  if (fast64 && base64 && fast1 && base1 && direct1) {
    const sum = (cell: Cell, skip: string[]) =>
      Object.entries(cell.cpuPerCall)
        .filter(([role]) => !skip.includes(role))
        .reduce((total, [, ms]) => total + ms, 0);
    const echoCpu = sum(base64, []);
    const othersCpu = sum(fast64, ["dispatcher", "echo"]);
    targets.push(
      "",
      "## Why",
      "",
      `- Throughput: both cores are saturated at c64, so rps follows total CPU per call. The echo costs ${echoCpu.toFixed(3)} ms of CPU per call (client + server). The chain's processes other than the Dispatcher (client, backend, nats-server) already cost ${othersCpu.toFixed(3)} ms per call, so even a Dispatcher that cost nothing would reach at most ${(echoCpu / othersCpu).toFixed(2)}× echo; with the Dispatcher's ${(fast64.cpuPerCall.dispatcher ?? 0).toFixed(3)} ms (one gRPC server call, one streaming gRPC client call, five JetStream messages and their acks — lease, TOOL_EXECUTE, TOOL_RESULT, audit record, outcome — and, a few times a second, one purge of finished leases) it is ${(fast64.rps / base64.rps).toFixed(2)}×.`,
      `- Latency at c1: the chain makes three round trips where the echo makes one (agent → Dispatcher, Dispatcher → backend, Dispatcher → JetStream for the acks), each a wake-up of another process on two shared cores. The backend round trip alone is ${direct1.p50.toFixed(3)} ms at p50 here, so the added p50 cannot go below about that plus one NATS round trip, before the Dispatcher does any work; measured ${(fast1.p50 - base1.p50).toFixed(3)} ms.`,
    );
  }
  targets.push(...floorSection(run, find("chain via main port (connect-node)", 64)));
  targets.push(...memorySection(cells));
  targets.push(...lagSection(run));
  const text = `${[...lines, ...targets].join("\n")}\n`;
  await writeResultsFile(text);
  await writeFile(
    path.join(repoRoot, "bench", "latency.svg"),
    latencyPlot(
      [
        "baseline: grpc-js echo",
        PROXY,
        "chain via main port (connect-node)",
        "chain via grpc-js port",
      ].map((name) => ({
        name,
        points: cells
          .filter((c) => c.name === name)
          .map((c) => ({ concurrency: c.concurrency, p50: c.p50 })),
      })),
    ),
  );
  process.stdout.write(text);
}

/** JetStream writes the Dispatcher makes per call: lease, TOOL_EXECUTE, TOOL_RESULT, audit record, outcome. */
const DISPATCHER_WRITES = 5;
/** Writes the consumers add per call: the audit log append; Callback's call key, trace event, broadcast and marked rewrite. */
const CONSUMER_WRITES = 5;

function floorSection(run: RunSettings, chain64: Cell | undefined): string[] {
  const { writesPerSecond, natsCpuUsPerWrite } = run.floor;
  const perCall = DISPATCHER_WRITES + CONSUMER_WRITES;
  return [
    "",
    "## The JetStream floor",
    "",
    `One acked JetStream write here, at 64 in flight over four streams, with the stack's nats-server settings (\`sync_interval: always\`: an fsync before every ack): ${writesPerSecond.toFixed(0)} writes/s, ${natsCpuUsPerWrite.toFixed(0)} µs of nats-server CPU per write.`,
    `A call costs ${DISPATCHER_WRITES} acked writes in the Dispatcher and ${CONSUMER_WRITES} more in the consumers that follow it (Audit, Callback), so with every record on disk before its ack the stack cannot exceed about ${(writesPerSecond / perCall).toFixed(0)} calls/s on this machine, whatever the services cost${chain64 ? `; the chain measured ${chain64.rps.toFixed(0)} calls/s at c64 (nats-server ${(chain64.cpuPerCall.nats ?? 0).toFixed(3)} ms CPU per call)` : ""}.`,
  ];
}

/** Target: every service under 150 MB of RSS during the c64 run. */
const RSS_TARGET_MB = 150;

function memorySection(cells: Cell[]): string[] {
  const c64 = cells.filter((c) => c.concurrency === 64 && c.name.startsWith("chain"));
  if (c64.length === 0) return [];
  const peak = new Map<string, number>();
  for (const cell of c64)
    for (const [role, mb] of Object.entries(cell.peakRssMb))
      peak.set(role, Math.max(peak.get(role) ?? 0, mb));
  const services = ["registry", "permission", "dispatcher", "audit", "callback", "memory-writer"];
  const rows = services
    .filter((s) => peak.has(s))
    .map((s) => {
      const mb = peak.get(s) ?? 0;
      return `| ${s} | ${mb.toFixed(0)} | ${mb < RSS_TARGET_MB ? "met" : "MISSED"} |`;
    });
  const others = [...peak]
    .filter(([role]) => !services.includes(role))
    .map(([role, mb]) => `${role} ${mb.toFixed(0)} MB`)
    .join(", ");
  return [
    "",
    "## Memory during the c64 runs",
    "",
    `Peak RSS of each service while the chain ran at concurrency 64 (target < ${RSS_TARGET_MB} MB each). Others: ${others}.`,
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
    `${seconds} s of calls at concurrency ${concurrency} through the Dispatcher's main port (${calls} calls, ${(calls / seconds).toFixed(0)}/s), then each consumer's lag (messages not yet acked) when the load stopped and the time until it was zero (target: every lag zero within 5 s).`,
    "",
    "| consumer | lag at the end | zero after s | target |",
    "|---|---:|---:|---|",
    ...lag.map(
      (row) =>
        `| ${row.service} | ${row.lagAtEnd} | ${Number.isNaN(row.drainSeconds) ? "not within 120 s" : row.drainSeconds.toFixed(1)} | ${row.drainSeconds <= 5 ? "met" : "MISSED"} |`,
    ),
  ];
}
