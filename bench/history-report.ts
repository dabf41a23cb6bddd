import { commonConfig, loadConfig, streamMaxAgeMs } from "@toolmesh/config";
import { bucketNames, streamNames } from "@toolmesh/nats";
import { auditConfig } from "../services/audit/src/config.js";
import { callbackConfig } from "../services/callback/src/config.js";
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
const DAY_S = 24 * 60 * 60;
/** The rates docs/operations.md sizes a stack for, in calls a second. */
const RATES = [100, 1000];
/** Issue 25's target: bytes a call in every store together. */
const BYTES_TARGET = 1536;

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

/** One store of a call's bytes, and what it holds after `days` at `rate` calls a second. */
interface Store {
  name: string;
  bytes: number;
  /** Bytes held after `days` of calls at `rate`, given bytes a call, under the default limits. */
  held(perCall: number, rate: number, days: number): number;
  /** The default limit that bounds it, if any. */
  bound: string;
}

/** Every store a call reaches, with its measured bytes and its defaults (docs/configuration.md). */
function stores(history: StackFigures): Store[] {
  const common = loadConfig(commonConfig, {});
  const audit = loadConfig(auditConfig, {});
  const callback = loadConfig(callbackConfig, {});
  const feedDays = streamMaxAgeMs(common) / (DAY_S * 1000);
  const calls = (rate: number, days: number) => rate * days * DAY_S;
  const grows = (perCall: number, rate: number, days: number) => perCall * calls(rate, days);
  const stream = (name: string) => history.streamBytes[name] ?? 0;
  return [
    {
      name: `${streamNames.records} (after Audit took the batches)`,
      bytes: stream(streamNames.records),
      // A work queue: it holds Audit's lag, not history.
      held: () => stream(streamNames.records),
      bound: "Audit's lag (1 GiB limit)",
    },
    {
      name: `${streamNames.auditLog} (the hot log)`,
      bytes: stream(streamNames.auditLog),
      held: (perCall, rate, days) => Math.min(grows(perCall, rate, days), audit.maxBytes),
      bound: `${gib(audit.maxBytes)} (TOOLMESH_AUDIT_MAX_BYTES), then its archived blocks leave`,
    },
    {
      name: "audit archive (sealed segments)",
      bytes: history.archiveBytes,
      held: grows,
      bound: `${audit.archiveMaxAgeDays} days (TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_DAYS)`,
    },
    {
      name: "Audit's index (SQLite)",
      bytes: history.auditIndexBytes,
      held: grows,
      bound: "as long as the log or archive holds a record",
    },
    {
      name: `${streamNames.callback} (the callback feed)`,
      bytes: stream(streamNames.callback),
      held: (perCall, rate, days) =>
        Math.min(grows(perCall, rate, Math.min(days, feedDays)), common.streamMaxBytes.callback),
      bound: `${gib(common.streamMaxBytes.callback)} or ${feedDays} days`,
    },
    {
      name: `KV_${bucketNames.usage} (usage)`,
      bytes: stream(`KV_${bucketNames.usage}`),
      // Grows by agent, user, tool and hour, not by call: bytes a call × calls is an upper bound.
      held: (perCall, rate, days) => Math.min(grows(perCall, rate, days), callback.usageMaxBytes),
      bound: `${gib(callback.usageMaxBytes)}; by key-hour, not call`,
    },
    {
      name: "memory files",
      bytes: history.memoryBytes,
      held: grows,
      bound: "none: until an operator deletes old days",
    },
  ];
}

const gib = (bytes: number) =>
  bytes >= 1024 ** 4
    ? `${(bytes / 1024 ** 4).toFixed(1)} TiB`
    : `${(bytes / 1024 ** 3).toFixed(bytes < 1024 ** 3 ? 2 : 0)} GiB`;

/**
 * Where the history's bytes are, per call, what 30 days at 100 and 1,000 calls/s hold under the
 * default limits, and issue 25's target on the total.
 */
function bytesPerCall(history: StackFigures, calls: number): string {
  const rows = stores(history).map((store) => {
    const perCall = store.bytes / calls;
    return { store, perCall, month: RATES.map((rate) => store.held(perCall, rate, 30)) };
  });
  const total = rows.reduce((n, r) => n + r.perCall, 0);
  const months = RATES.map((_, i) => rows.reduce((n, r) => n + (r.month[i] ?? 0), 0));
  // What keeps growing once the bounded stores are full: bytes a day at each rate.
  const daily = RATES.map((rate) =>
    rows.reduce(
      (n, r) => n + r.store.held(r.perCall, rate, 31) - r.store.held(r.perCall, rate, 30),
      0,
    ),
  );
  const log = rows.find((r) => r.store.name.startsWith(streamNames.auditLog));
  const hotDays = RATES.map((rate) =>
    log && log.perCall > 0
      ? loadConfig(auditConfig, {}).maxBytes / (log.perCall * rate * DAY_S)
      : Number.POSITIVE_INFINITY,
  );
  return [
    `| store | bytes a call | 30 days at ${RATES.map((r) => `${r.toLocaleString("en")} calls/s`).join(" | 30 days at ")} | bounded by (defaults) |`,
    "|---|---:|---:|---:|---|",
    ...rows.map(
      (r) =>
        `| ${r.store.name} | ${r.perCall.toFixed(0)} | ${r.month.map(gib).join(" | ")} | ${r.store.bound} |`,
    ),
    `| **all stores** | **${total.toFixed(0)}** (target ≤ ${BYTES_TARGET}: ${verdict(total <= BYTES_TARGET)}) | ${months.map(gib).join(" | ")} |  |`,
    "",
    `Nothing on a call's path fills up with history: the record stream holds Audit's lag, the hot log drops only archived blocks, the feed and usage drop their oldest. After 30 days the disk grows by ${daily.map((d, i) => `${gib(d)} a day at ${(RATES[i] as number).toLocaleString("en")} calls/s`).join(" and ")} (archive, index and memory files); the hot log's ${gib(loadConfig(auditConfig, {}).maxBytes)} hold the last ${hotDays.map((d, i) => `${d < 1 ? `${(d * 24).toFixed(1)} hours` : `${d.toFixed(1)} days`} at ${(RATES[i] as number).toLocaleString("en")} calls/s`).join(", ")}.`,
  ].join("\n");
}

/** The "History" section of bench/results.md. */
export function historySection(run: {
  calls: number;
  throughDispatcher: number;
  growSync: string;
  runSeconds: number;
  starts: number;
  blockRecords: number;
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
  return `## History

${runLine(`BENCH_HISTORY_CALLS=${calls} npm run bench:history`)}

Each shape: a fresh stack (a new data directory, started once to set it up: the no-op tool and a grant) and a stack grown to ${calls} calls — ${calls - run.throughDispatcher} written straight into the stores by the services' own mappings (test/history): each call's start and end record from the Dispatcher's recorder, redacted and chained as one record (as Audit chains a call that ends within TOOLMESH_AUDIT_MERGE_MS) into the audit log ${run.blockRecords} record(s) a block (Audit's chain writer makes 2 of 100 calls/s with its 20 ms linger), the log sealed into archive segments, the outcome broadcast on the callback feed and counted in usage, the two memory lines; the log's followers set past them — then ${run.throughDispatcher} through the Dispatcher at concurrency 64, Audit's index caught up — are restarted in turn ${run.starts} times each — the first restart is the one an operator meets after the stack ran (nats-server may rebuild stream state then); the best shows the start without the machine's other load, and the last starts stay up side by side: RSS 2 s after, the store, then ${run.runSeconds} s closed-loop runs of the no-op tool through each Dispatcher's grpc-js port at concurrency 1 and 64, the two stacks taking turns in slices, the calls spread over the shape's agents; CPU per call counts each process until every consumer has acked the slice's calls. The history is grown with nats-server at \`sync_interval: ${run.growSync}\`; the restarts and runs are with \`sync_interval: always\`. Both stacks run with the default limits.

${tables.join("\n\n")}
${last ? `\nBytes a call in the stack with history (${last.agents} agents), and what 30 days hold under the default limits:\n\n${bytesPerCall(last.history, calls)}\n` : ""}`;
}
