import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { JetStreamPublisher, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  AuditService,
  CallStatus,
  TraceEventKind,
  TraceEventSchema,
} from "@toolmesh/proto";
import { eventually, startOneService } from "@toolmesh/testkit";
import { headers as natsHeaders } from "nats";
import { AUDIT_LOG_STREAM } from "../services/audit/src/audit-log.js";
import { readChainEnds } from "../services/audit/src/log-ends.js";
import { cpuMs, rssMb } from "./proc.js";
import { resultsFile, runLine, writeResultsFile } from "./results-file.js";

// npm run bench:audit: the Audit service at scale. Publishes N audit records (and two trace
// events per call) straight into the input streams, lets Audit chain them (the chaining rate),
// restarts it on that history (time to SERVING, RSS) and measures QueryRecords with an
// agent + tool + time filter and GetTrace. BENCH_AUDIT_RECORDS picks N (1,000,000).
const N = Number(process.env.BENCH_AUDIT_RECORDS ?? 1_000_000);
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

/** One record in this many is of a trace GetTrace is asked for. */
const TRACE_EVERY = Math.max(1, Math.floor(N / 1000));
const traceIdOf = (i: number) => (i + 1).toString(16).padStart(32, "0");

const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-audit-"));
const one = await startOneService("audit", {
  streams: ["audit", "trace"],
  started: false,
  env: {
    TOOLMESH_DATA_DIR: dataDir,
    ...(process.env.AUDIT_NODE_OPTIONS ? { NODE_OPTIONS: process.env.AUDIT_NODE_OPTIONS } : {}),
  },
});
const { nats, nc, jsm } = one;
try {
  const t0 = Date.now() - SPAN_MS;
  // GetTrace reads a trace's shard of the trace stream around the time its records give, and
  // nats-server stamps the events with the time they were published: the records of the traces
  // GetTrace is asked for (one in TRACE_EVERY) carry that time too, the rest spread over 30 days.
  const traced = (i: number) => i % TRACE_EVERY === 0;
  const timeOf = (i: number) => (traced(i) ? Date.now() : t0 + Math.floor((i * SPAN_MS) / N));

  say(`audit-scale: ${N} records, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`);
  const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 60_000 });
  const window: Promise<unknown>[] = [];
  const published = performance.now();
  for (let i = 0; i < N; i++) {
    const traceId = traceIdOf(i);
    const record = create(AuditRecordSchema, {
      id: `bench-${i}`,
      time: timestampFromMs(timeOf(i)),
      action: AuditAction.TOOL_CALL,
      tool: `tool-${i % TOOLS}.run`,
      agentId: `agent-${i % AGENTS}`,
      userId: `user-${i % 7}`,
      roles: ["agent"],
      callId: `call-${i}`,
      traceId,
      arguments: { query: `select ${i}`, limit: 10, password: "hunter2" },
      status: i % 20 === 0 ? CallStatus.FAILURE : CallStatus.SUCCESS,
      durationMs: 3,
      attempts: 1,
      source: "bench",
    });
    const h = natsHeaders();
    h.set(TYPE_HEADER, AuditRecordSchema.typeName);
    h.set("Nats-Msg-Id", record.id);
    window.push(
      publisher.publish(
        subjects.audit("dispatcher", record.agentId, record.tool),
        toBinary(AuditRecordSchema, record),
        h,
      ),
    );
    for (const kind of [TraceEventKind.TOOL_EXECUTE, TraceEventKind.TOOL_RESULT]) {
      const th = natsHeaders();
      th.set(TYPE_HEADER, TraceEventSchema.typeName);
      const event = create(TraceEventSchema, {
        id: `${i}-${kind}`,
        traceId,
        callId: record.callId,
        kind,
      });
      window.push(
        publisher.publish(
          subjects.trace("dispatcher", traceId),
          toBinary(TraceEventSchema, event),
          th,
        ),
      );
    }
    if (window.length >= 3000) await Promise.all(window.splice(0));
  }
  await Promise.all(window);
  publisher.close();
  const publishS = (performance.now() - published) / 1000;
  say(`published ${N} records and ${2 * N} trace events in ${publishS.toFixed(1)} s`);

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
      const res = await client.queryRecords({ callId: `call-${N - 1}` }, auth);
      if (res.records.length === 0) throw new Error(`call-${N - 1} is not in the index yet`);
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
    const i = Math.floor(Math.random() * Math.ceil(N / TRACE_EVERY)) * TRACE_EVERY;
    const began = performance.now();
    const res = await client.getTrace({ traceId: traceIdOf(i) }, auth);
    traceMs.push(performance.now() - began);
    if (res.events.length !== 2)
      throw new Error(`trace of record ${i} has ${res.events.length} events`);
  }
  const rssAfterQueries = rssMb(audit.child.pid as number);
  const dbBytes = statSync(path.join(dataDir, "audit", "index.sqlite")).size;
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  const rows = [
    ["records in the audit log", `${N}`, ""],
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
      `GetTrace p50 / p99 (${QUERIES} random traces of 2 events)`,
      `${percentile(traceMs, 50).toFixed(1)} / ${percentile(traceMs, 99).toFixed(1)} ms`,
      "",
    ],
    [
      "log stream / SQLite index on disk",
      `${(state.bytes / 2 ** 20).toFixed(0)} / ${(dbBytes / 2 ** 20).toFixed(0)} MiB`,
      "",
    ],
  ];
  const table = [
    "| figure | measured | target |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
  say(table);
  const section = `## Audit at scale

${runLine(`BENCH_AUDIT_RECORDS=${N} npm run bench:audit`)}

${N} audit records (${AGENTS} agents × ${TOOLS} tools over 30 days) and ${2 * N} trace events published straight into the input streams in ${publishS.toFixed(0)} s; Audit started on the full input stream and chained it, was stopped (SIGTERM) and started again on that history. nats-server stamps each trace event with the time it was published, so the records of the traces GetTrace is asked for (one in ${TRACE_EVERY}) carry their publish time; GetTrace then reads their shard of the trace stream from 10 s before to 60 s after it, which here holds up to ${Math.round((2 * N) / 256)} of the events published in that burst of ${Math.round((2 * N) / publishS)} events/s: a heavier read than a stack at its own rate makes.

${table}
`;
  await writeResultsFile(section);
  say(`written to ${path.relative(process.cwd(), resultsFile)}`);
} finally {
  await one.stop();
  await rm(dataDir, { recursive: true, force: true });
}
