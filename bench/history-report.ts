import { CALLBACK_BUCKET } from "../services/callback/src/call-store.js";
import { LIVE_CALLS } from "../test/history/call-history.js";
import { HISTORY_SERVICES, type StackFigures } from "./history-figures.js";
import { runLine } from "./results-file.js";

/** The figures of one history shape: a fresh stack and one with the history, same run. */
export interface ShapeResult {
  agents: number;
  fresh: StackFigures;
  history: StackFigures;
}

const MiB = 1024 * 1024;
/** The unit /proc/<pid>/stat counts CPU time in (USER_HZ = 100). */
const TICK_MS = 10;
/** Calls in 30 days at 100 calls a second: the size docs/operations.md projects. */
const MONTH_AT_100_PER_S = 100 * 30 * 24 * 60 * 60;

const verdict = (met: boolean) => (met ? "met" : "**MISSED**");
const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "–");
const ms = (v: number) => `${Math.round(v)} ms`;

/** The rows of one shape's table: figure, fresh, with history, ratio, target. */
function shapeRows({ fresh, history }: ShapeResult, calls: number): string[][] {
  const rows: string[][] = [];
  for (const [label, pick] of [
    ["first restart", (f: StackFigures) => f.firstStart],
    [`best of ${history.starts} restarts`, (f: StackFigures) => f.start],
  ] as const) {
    const f = pick(fresh);
    const h = pick(history);
    const added = h.stackMs - f.stackMs;
    rows.push([
      `whole stack, ${label}: start to every service SERVING`,
      ms(f.stackMs),
      ms(h.stackMs),
      ratio(h.stackMs, f.stackMs),
      `< fresh + 4 s (${added >= 0 ? "+" : ""}${(added / 1000).toFixed(2)} s): ${verdict(added < 4000)}`,
    ]);
    const fn = f.readyMs["nats-server"] ?? 0;
    const hn = h.readyMs["nats-server"] ?? 0;
    rows.push([`nats-server, ${label}: spawn to ready`, ms(fn), ms(hn), ratio(hn, fn), ""]);
  }
  for (const name of HISTORY_SERVICES) {
    const f = fresh.start.readyMs[name] ?? 0;
    const h = history.start.readyMs[name] ?? 0;
    const cpu = (s: StackFigures) =>
      name in s.start.cpuMs ? ` (${s.start.cpuMs[name]} ms CPU)` : "";
    rows.push([
      `${name}: spawn to SERVING`,
      `${ms(f)}${cpu(fresh)}`,
      `${ms(h)}${cpu(history)}`,
      ratio(h, f),
      "",
    ]);
  }
  for (const name of HISTORY_SERVICES) {
    const f = fresh.rssMb[name] ?? 0;
    const h = history.rssMb[name] ?? 0;
    const bound = Math.max(1.2 * f, f + 25);
    rows.push([
      `${name}: RSS after the restart`,
      `${f.toFixed(0)} MB`,
      `${h.toFixed(0)} MB`,
      ratio(h, f),
      `≤ ${bound.toFixed(0)} MB: ${verdict(h <= bound)}`,
    ]);
  }
  const natsAfter = history.rssMb["nats-server"] ?? 0;
  rows.push([
    "nats-server: RSS after the restart / after the runs",
    `${(fresh.rssMb["nats-server"] ?? 0).toFixed(0)} / ${fresh.natsRssAfterRunsMb.toFixed(0)} MB`,
    `${natsAfter.toFixed(0)} / ${history.natsRssAfterRunsMb.toFixed(0)} MB`,
    ratio(history.natsRssAfterRunsMb, fresh.natsRssAfterRunsMb),
    `< 300 MB: ${verdict(Math.max(natsAfter, history.natsRssAfterRunsMb) < 300)}`,
  ]);
  rows.push([
    "distinct subjects in the per-call streams (nats-server indexes each in memory)",
    `${fresh.subjects}`,
    `${history.subjects} (${(history.subjects / calls).toFixed(1)} a call)`,
    "",
    "",
  ]);
  rows.push([
    "JetStream store on disk",
    `${(fresh.storeBytes / MiB).toFixed(0)} MiB`,
    `${(history.storeBytes / MiB).toFixed(0)} MiB (${Math.round(history.storeBytes / calls)} B a call)`,
    "",
    "",
  ]);
  for (const [i, run] of history.runs.entries()) {
    const base = fresh.runs[i];
    if (!base) continue;
    rows.push([
      `calls/s at concurrency ${run.concurrency}`,
      base.rps.toFixed(0),
      run.rps.toFixed(0),
      ratio(run.rps, base.rps),
      run.errors + base.errors > 0 ? `${run.errors + base.errors} errors` : "",
    ]);
    // /proc counts CPU in 10 ms ticks: a difference of two ticks over the run is no signal.
    const resolution = 2 * (TICK_MS / Math.min(run.calls, base.calls));
    for (const [name, h] of Object.entries(run.cpuPerCall)) {
      const f = base.cpuPerCall[name] ?? 0;
      const within = h - f <= resolution;
      rows.push([
        `${name}: CPU per call at concurrency ${run.concurrency}`,
        `${f.toFixed(3)} ms`,
        `${h.toFixed(3)} ms`,
        ratio(h, f),
        HISTORY_SERVICES.includes(name)
          ? `≤ 1.2×: ${verdict(h <= 1.2 * f || within)}${h > 1.2 * f && within ? " (within two /proc ticks)" : ""}`
          : "",
      ]);
    }
  }
  return rows;
}

/**
 * Where the history's bytes are, per call, and what 30 days at 100 calls/s would take. The
 * callback bucket holds only the live calls: its bytes are per live key, and what it takes is
 * those of LIVE_CALLS keys at any age of the stack.
 */
function bytesPerCall(history: StackFigures, calls: number): string {
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(bytes < 1024 ** 3 ? 2 : 0)} GiB`;
  const rows: { name: string; perCall: number; month: number }[] = [];
  const add = (name: string, bytes: number) =>
    rows.push({ name, perCall: bytes / calls, month: (bytes / calls) * MONTH_AT_100_PER_S });
  for (const [name, bytes] of Object.entries(history.streamBytes)) {
    if (name === `KV_${CALLBACK_BUCKET}`) {
      const perKey = bytes / Math.max(1, history.liveKeys);
      rows.push({
        name: `${name} (${history.liveKeys} live keys; per key)`,
        perCall: perKey,
        month: perKey * LIVE_CALLS,
      });
    } else add(name, bytes);
  }
  add("memory files", history.memoryBytes);
  add("Audit's SQLite index", history.auditIndexBytes);
  add("Callback's outcome history (SQLite)", history.callbackHistoryBytes);
  const month = rows.reduce((sum, r) => sum + r.month, 0);
  return [
    "| where | bytes a call | 30 days at 100 calls/s |",
    "|---|---:|---:|",
    ...rows.map((r) => `| ${r.name} | ${r.perCall.toFixed(0)} | ${gib(r.month)} |`),
    `| total |  | ${gib(month)} |`,
  ].join("\n");
}

/** The "History" section of bench/results.md. */
export function historySection(run: {
  calls: number;
  throughDispatcher: number;
  growSync: string;
  runSeconds: number;
  starts: number;
  streamEnv: Record<string, string>;
  results: ShapeResult[];
}): string {
  const { calls, results } = run;
  const tables = results.map((r) => {
    const rows = shapeRows(r, calls).map((cells) => `| ${cells.join(" | ")} |`);
    return [
      `### ${r.agents === 1 ? "One agent" : `${r.agents} agents`}`,
      "",
      `| figure | fresh | ${calls} calls | ratio | target |`,
      "|---|---:|---:|---:|---|",
      ...rows,
    ].join("\n");
  });
  const last = results.at(-1);
  const env = Object.entries(run.streamEnv)
    .map(([k, v]) => `${k}=${v} `)
    .join("");
  return `## History

${runLine(`BENCH_HISTORY_CALLS=${calls} npm run bench:history`)}

Each shape: a fresh stack (a new data directory, started once to set it up: the no-op tool and a grant) and a stack grown to ${calls} calls — ${calls - run.throughDispatcher} written straight into the streams, the callback bucket and the memory files by the services' own record mappings (test/history) — of them the last ${Math.min(LIVE_CALLS, calls - run.throughDispatcher).toLocaleString("en")} calls' keys in the callback bucket, those a stack at 100 calls/s still holds in its live window (\`TOOLMESH_CALLBACK_LIVE_SECONDS\`, 1 h; older calls' keys have expired and are found in Callback's outcome history, their usage in its hourly aggregates) — the consumers' backlogs acked, then ${run.throughDispatcher} through the Dispatcher — are restarted in turn ${run.starts} times each — the first restart is the one an operator meets after the stack ran (nats-server may rebuild stream state then); the best shows the start without the machine's other load, and the last starts stay up side by side: RSS 2 s after, the store, then ${run.runSeconds} s closed-loop runs of the no-op tool through each Dispatcher's grpc-js port at concurrency 1 and 64, the two stacks taking turns in slices, the calls spread over the shape's agents; CPU per call counts each process until every consumer has acked the slice's calls. The history is grown with nats-server at \`sync_interval: ${run.growSync}\` (fsync always, about 5,000 writes/s here, would take hours); the restarts and runs are with \`sync_interval: always\`. Both stacks run with ${env || "the default limits"}(the trace stream's default 1 GiB holds about 800,000 calls).

${tables.join("\n\n")}
${last ? `\nBytes a call in the stack with history (${last.agents} agents), and what 30 days at 100 calls/s would need:\n\n${bytesPerCall(last.history, calls)}\n` : ""}`;
}
