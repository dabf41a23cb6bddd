import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { JetStreamPublisher, streamNames, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  AuditService,
  CallStatus,
  RecordBatchSchema,
} from "@toolmesh/proto";
import { encodeRecords } from "@toolmesh/records";
import { eventually, startOneService } from "@toolmesh/testkit";
import { headers as natsHeaders } from "nats";
import { AUDIT_LOG_STREAM } from "../services/audit/src/audit-log.js";
import { readChainEnds } from "../services/audit/src/log-ends.js";
import { cpuMs, rssMb } from "./proc.js";
import { resultsFile, runLine, writeResultsFile } from "./results-file.js";

// npm run bench:audit: the Audit service at scale. Writes N records — a start and an end record
// for each of N/2 calls — straight into the record stream as the Dispatcher's batches of
// BENCH_AUDIT_BATCH records, lets Audit chain them into the audit log (the chaining rate),
// restarts it on that history (time to SERVING, RSS) and measures QueryRecords with an agent +
// tool + time filter and GetTrace (derived from the records in the index). BENCH_AUDIT_RECORDS
// picks N (1,000,000).
const N = 2 * Math.ceil(Number(process.env.BENCH_AUDIT_RECORDS ?? 1_000_000) / 2);
const CALLS = N / 2;
/** Records per batch message: what the Dispatcher's group commit makes at concurrency 64. */
const BATCH = 2 * Math.max(1, Math.floor(Number(process.env.BENCH_AUDIT_BATCH ?? 64) / 2));
const QUERIES = Number(process.env.BENCH_AUDIT_QUERIES ?? 300);
const AGENTS = 20;
const TOOLS = 10;
const SPAN_MS = 30 * 24 * 60 * 60 * 1000;
const WINDOW_MS = 6 * 60 * 60 * 1000;

const say = (line: string) => process.stdout.write(`${line}\n`);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** One call in this many is of a trace GetTrace is asked for. */
const TRACE_EVERY = Math.max(1, Math.floor(CALLS / 1000));
const traceIdOf = (i: number) => (i + 1).toString(16).padStart(32, "0");

/** Call i's start and end records, as the Dispatcher writes them, i / CALLS into the 30 days. */
function callRecords(i: number, t0: number): Uint8Array[] {
  const startedMs = t0 + Math.floor((i * SPAN_MS) / CALLS);
  const common = {
    tool: `tool-${i % TOOLS}.run`,
    agentId: `agent-${i % AGENTS}`,
    userId: `user-${i % 7}`,
    roles: ["agent"],
    callId: `call-${i}`,
    traceId: traceIdOf(i),
    source: "dispatcher",
  };
  const start = create(AuditRecordSchema, {
    ...common,
    action: AuditAction.TOOL_START,
    time: timestampFromMs(startedMs),
    arguments: { query: `select ${i}`, limit: 10, password: "hunter2" },
    instance: "bench",
    deadline: timestampFromMs(startedMs + 30_000),
    timeoutMs: 30_000,
    runtime: "grpc",
  });
  const failed = i % 20 === 0;
  const end = create(AuditRecordSchema, {
    ...common,
    action: AuditAction.TOOL_CALL,
    time: timestampFromMs(startedMs + 3),
    startedAt: timestampFromMs(startedMs),
    status: failed ? CallStatus.FAILURE : CallStatus.SUCCESS,
    ...(failed
      ? { errorCode: "backend_error", errorMessage: "the backend refused" }
      : { output: { rows: 1 } }),
    durationMs: 3,
    attempts: 1,
  });
  return [toBinary(AuditRecordSchema, start), toBinary(AuditRecordSchema, end)];
}

const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-audit-"));
const one = await startOneService("audit", {
  streams: ["records"],
  started: false,
  env: {
    TOOLMESH_DATA_DIR: dataDir,
    ...(process.env.AUDIT_NODE_OPTIONS ? { NODE_OPTIONS: process.env.AUDIT_NODE_OPTIONS } : {}),
  },
});
const { nats, nc, jsm } = one;
try {
  const t0 = Date.now() - SPAN_MS;
  say(
    `audit-scale: ${N} records of ${CALLS} calls in batches of ${BATCH}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`,
  );
  const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 60_000 });
  const window: Promise<unknown>[] = [];
  const published = performance.now();
  let batches = 0;
  for (let from = 0; from < CALLS; from += BATCH / 2) {
    const records: Uint8Array[] = [];
    for (let i = from; i < Math.min(CALLS, from + BATCH / 2); i++)
      records.push(...callRecords(i, t0));
    const h = natsHeaders();
    h.set(TYPE_HEADER, RecordBatchSchema.typeName);
    h.set("Nats-Msg-Id", `bench-${++batches}`);
    window.push(publisher.publish(subjects.records("dispatcher"), encodeRecords(records), h));
    if (window.length >= 64) await Promise.all(window.splice(0));
  }
  await Promise.all(window);
  publisher.close();
  const publishS = (performance.now() - published) / 1000;
  const recordStream = await jsm.streams.info(streamNames.records);
  say(
    `published ${N} records in ${batches} batches in ${publishS.toFixed(1)} s (${(recordStream.state.bytes / 2 ** 20).toFixed(0)} MiB in ${streamNames.records})`,
  );

  let audit = await one.start();
  const chainStart = performance.now();
  const cpuStart = cpuMs(audit.child.pid as number);
  const natsCpuStart = cpuMs(nats.pid);
  let peakRss = 0;
  let logMessages = 0;
  await eventually(
    async () => {
      const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
      peakRss = Math.max(peakRss, rssMb(audit.child.pid as number));
      // Stream sequences count messages (blocks); the chain's last sequence counts records.
      const { last } = await readChainEnds(jsm, state);
      logMessages = state.messages;
      if ((last?.sequence ?? 0n) < BigInt(N)) throw new Error(`chained ${last?.sequence ?? 0n}`);
    },
    3_600_000,
    `Audit chaining ${N} records`,
    250,
  );
  const chainS = (performance.now() - chainStart) / 1000;
  const chainCpuUs = ((cpuMs(audit.child.pid as number) - cpuStart) * 1000) / N;
  const natsCpuUs = ((cpuMs(nats.pid) - natsCpuStart) * 1000) / N;
  const chainRate = N / chainS;
  say(
    `chained ${N} in ${chainS.toFixed(1)} s: ${Math.round(chainRate)} records/s in ${logMessages} log messages, ${chainCpuUs.toFixed(0)} µs CPU per record in Audit and ${natsCpuUs.toFixed(0)} µs in nats-server, peak RSS ${peakRss.toFixed(0)} MB`,
  );

  const auth = await one.bearer("bench", ["auditor"]);
  let client = one.client(AuditService);
  // The index follows the stream; wait until it holds the last record.
  const indexStart = performance.now();
  await eventually(
    async () => {
      const res = await client.queryRecords({ callId: `call-${CALLS - 1}` }, auth);
      if (res.records.length < 2) throw new Error(`call-${CALLS - 1} is not in the index yet`);
    },
    3_600_000,
    "the index holding the last record",
    250,
  );
  const indexLagS = (performance.now() - indexStart) / 1000;
  say(`index caught up ${indexLagS.toFixed(1)} s after the last record was chained`);

  await audit.stop();
  const restartAt = performance.now();
  audit = await one.start({}, { timeoutMs: 120_000 });
  const servingS = (performance.now() - restartAt) / 1000;
  const opened = JSON.parse(
    await audit.stdout.waitFor(
      (l) => /"msg":"audit index (opened|rebuilt)"/.test(l),
      1000,
      "index line",
    ),
  ) as { rebuilt: boolean; reason: string; readAtStart: number; catchUpMs: number };
  const rssAfterRestart = rssMb(audit.child.pid as number);
  say(
    `restart to SERVING ${servingS.toFixed(2)} s (index ${opened.rebuilt ? `REBUILT: ${opened.reason}` : "opened"}, ${opened.readAtStart} records read at start), RSS ${rssAfterRestart.toFixed(0)} MB`,
  );

  client = one.client(AuditService);
  const queryMs: number[] = [];
  let matched = 0;
  for (let q = 0; q < QUERIES; q++) {
    const from = t0 + Math.floor(Math.random() * (SPAN_MS - WINDOW_MS));
    const began = performance.now();
    const res = await client.queryRecords(
      {
        agentId: `agent-${q % AGENTS}`,
        tool: `tool-${q % TOOLS}.run`,
        startTime: timestampFromMs(from),
        endTime: timestampFromMs(from + WINDOW_MS),
        pageSize: 100,
      },
      auth,
    );
    queryMs.push(performance.now() - began);
    matched += res.records.length;
  }
  const traceMs: number[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const i = Math.floor(Math.random() * Math.ceil(CALLS / TRACE_EVERY)) * TRACE_EVERY;
    const began = performance.now();
    const res = await client.getTrace({ traceId: traceIdOf(i) }, auth);
    traceMs.push(performance.now() - began);
    // TOOL_EXECUTE from the start record; TOOL_RESULT and CALLBACK_<status> from the end.
    if (res.events.length !== 3)
      throw new Error(`trace of call ${i} has ${res.events.length} events, not 3`);
  }
  const rssAfterQueries = rssMb(audit.child.pid as number);
  const dbBytes = statSync(path.join(dataDir, "audit", "index.sqlite")).size;
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  const recordsLeft = (await jsm.streams.info(streamNames.records)).state;
  // Every call has its end: a sweeper that closed one would have chained a record more.
  const swept = Number((await readChainEnds(jsm, state)).last?.sequence ?? 0n) - N;
  const rows = [
    ["records in the audit log", `${N} (${CALLS} calls: a start and an end record each)`, ""],
    [
      "chaining rate (prefilled input stream drained)",
      `${Math.round(chainRate)} records/s`,
      "≥ 10,000 (aim 20,000)",
    ],
    ["log stream messages (blocks of records)", `${logMessages}`, ""],
    ["Audit CPU per record while chaining", `${chainCpuUs.toFixed(0)} µs`, ""],
    ["nats-server CPU per record while chaining", `${natsCpuUs.toFixed(0)} µs`, ""],
    ["Audit peak RSS while chaining", `${peakRss.toFixed(0)} MB`, "< 300 MB"],
    ["index behind the chain at the end", `${indexLagS.toFixed(1)} s`, ""],
    [
      "restart to SERVING",
      `${servingS.toFixed(2)} s (${opened.readAtStart} records read at start${opened.rebuilt ? `; index rebuilt: ${opened.reason}` : ""})`,
      "< 10 s",
    ],
    [
      "Audit RSS after the restart / after the queries",
      `${rssAfterRestart.toFixed(0)} / ${rssAfterQueries.toFixed(0)} MB`,
      "< 300 MB",
    ],
    [
      `QueryRecords agent+tool+6 h window p50 / p99 (${QUERIES} queries, ${(matched / QUERIES).toFixed(0)} records each)`,
      `${percentile(queryMs, 50).toFixed(1)} / ${percentile(queryMs, 99).toFixed(1)} ms`,
      "p50 < 50 ms",
    ],
    [
      `GetTrace p50 / p99 (${QUERIES} random traces of one call, 3 events derived from its 2 records)`,
      `${percentile(traceMs, 50).toFixed(1)} / ${percentile(traceMs, 99).toFixed(1)} ms`,
      "",
    ],
    [
      "log stream / SQLite index on disk",
      `${(state.bytes / 2 ** 20).toFixed(0)} / ${(dbBytes / 2 ** 20).toFixed(0)} MiB (${Math.round(state.bytes / N)} / ${Math.round(dbBytes / N)} B a record)`,
      "",
    ],
    [
      `${streamNames.records} after the chaining (work queue: what Audit acked is gone)`,
      `${recordsLeft.messages} messages, ${recordsLeft.bytes} bytes`,
      "0",
    ],
    ["records the open-call sweeper added (every call has its end)", `${swept}`, "0"],
  ];
  const table = [
    "| figure | measured | target |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
  say(table);
  const section = `## Audit at scale

${runLine(`BENCH_AUDIT_RECORDS=${N} npm run bench:audit`)}

${N} records — a start and an end record of each of ${CALLS} calls (${AGENTS} agents × ${TOOLS} tools over 30 days) — written straight into ${streamNames.records} as the Dispatcher writes them, ${BATCH} records a batch message, in ${publishS.toFixed(0)} s; Audit started on the full record stream and chained it into the audit log, was stopped (SIGTERM) and started again on that history. GetTrace derives a trace's events from its records in the index (libs/records traceEvents).

${table}
`;
  await writeResultsFile(section);
  say(`written to ${path.relative(process.cwd(), resultsFile)}`);
} finally {
  await one.stop();
  await rm(dataDir, { recursive: true, force: true });
}
