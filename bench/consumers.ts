import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { busAccess, ensureStream, JetStreamPublisher, streamNames } from "@toolmesh/nats";
import { AuditAction, type AuditRecord, AuditRecordSchema, CallStatus } from "@toolmesh/proto";
import {
  consumerDrained,
  eventually,
  type ServiceProcess,
  startService,
  startTestBus,
} from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { auditLogStream } from "../services/audit/src/audit-log.js";
import { LogAppender } from "../test/history/log-blocks.js";
import { measureJetStreamFloor } from "./jetstream-floor.js";
import { cpuMs } from "./proc.js";
import { runLine, writeResultsFile } from "./results-file.js";
import { callWrites, streamCounters } from "./stream-writes.js";

// npm run bench:consumers: how fast Callback (broadcast, usage) and memory-writer (memory files)
// work off the audit log they follow. Each consumer is started once (its durable consumer on the
// log is made, at the log's end) and stopped; the records of N calls — a start and an end record
// each, chained as Audit chains them — are appended to the log in blocks of BENCH_CONSUMER_BLOCK
// records; the consumer then starts and the rate is the calls it works off per second, from its
// ready line until its durable has acked the last block.
const total = Number(
  process.env.BENCH_CONSUMER_CALLS ?? process.env.BENCH_CONSUMER_RECORDS ?? 20_000,
);
const agents = Number(process.env.BENCH_CONSUMER_AGENTS ?? 16);
/** Records in a block: what Audit chains into one when calls come at concurrency 64. */
const blockRecords =
  2 * Math.max(1, Math.floor(Number(process.env.BENCH_CONSUMER_BLOCK ?? 64) / 2));
const only = process.env.BENCH_ONLY ?? "";
const profileDir = process.env.BENCH_PROFILE_DIR;
const statuses = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED];
let natsServer = 0;

/** Call i's start and end records, as the Dispatcher writes them. */
function callRecords(i: number): AuditRecord[] {
  const status = statuses[i % 3] as CallStatus;
  const now = Date.now();
  const common = {
    callId: `bench-${i}-${randomBytes(4).toString("hex")}`,
    traceId: randomBytes(16).toString("hex"),
    tool: `bench.tool${i % 8}`,
    agentId: `bench-agent-${i % agents}`,
    userId: "bench-user",
    roles: ["agent"],
    source: "dispatcher",
  };
  return [
    create(AuditRecordSchema, {
      ...common,
      action: AuditAction.TOOL_START,
      time: timestampFromMs(now - 3),
      arguments: { n: i },
      instance: "bench",
      deadline: timestampFromMs(now + 30_000),
      timeoutMs: 30_000,
      runtime: "grpc",
    }),
    create(AuditRecordSchema, {
      ...common,
      action: AuditAction.TOOL_CALL,
      time: timestampFromMs(now),
      startedAt: timestampFromMs(now - 3),
      status,
      ...(status === CallStatus.SUCCESS
        ? { output: { rows: i, items: [{ id: i, name: "row", ok: true }], note: "bench" } }
        : {}),
      ...(status === CallStatus.FAILURE
        ? { errorCode: "backend_error", errorMessage: "the backend refused" }
        : {}),
      ...(status === CallStatus.INTERRUPTED ? { reason: "timeout" } : {}),
      durationMs: 3,
      attempts: 1,
    }),
  ];
}

/** Appends the records of `calls` calls to the audit log as Audit does, blockRecords a block. */
async function appendCalls(jsm: JetStreamManager, publisher: JetStreamPublisher, calls: number) {
  const log = await LogAppender.open(jsm, publisher, blockRecords);
  for (let i = 0; i < calls; i++) {
    for (const record of callRecords(i)) log.append(record);
    if (log.full) await log.drain();
  }
  await log.flush();
}

interface Figure {
  consumer: string;
  calls: number;
  blocks: number;
  seconds: number;
  rate: number;
  /** CPU ms per call of the consumer and of nats-server while it worked. */
  consumerCpu: number;
  natsCpu: number;
  /** Messages it stored per call, by stream. */
  writes: Record<string, number>;
}

/** Starts a consumer on the log's backlog and measures how fast it works it off. */
async function measure(
  name: string,
  start: () => Promise<ServiceProcess>,
  jsm: JetStreamManager,
  durable: string,
  blocks: number,
): Promise<{ figure: Figure; process: ServiceProcess }> {
  const before = await streamCounters(jsm);
  const process = await start();
  const pid = process.child.pid ?? 0;
  const cpu0 = [cpuMs(pid), cpuMs(natsServer)];
  const t0 = performance.now();
  await consumerDrained(jsm, streamNames.auditLog, durable, 600_000, 20);
  const t1 = performance.now();
  const cpu1 = [cpuMs(pid), cpuMs(natsServer)];
  const seconds = (t1 - t0) / 1000;
  const writes = callWrites(before, await streamCounters(jsm), total).byStream;
  return {
    figure: {
      consumer: name,
      calls: total,
      blocks,
      seconds,
      rate: total / seconds,
      consumerCpu: ((cpu1[0] ?? 0) - (cpu0[0] ?? 0)) / total,
      natsCpu: ((cpu1[1] ?? 0) - (cpu0[1] ?? 0)) / total,
      writes,
    },
    process,
  };
}

const profileEnv = (name: string): Record<string, string> =>
  profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.join(profileDir, name)}` } : {};

async function main(): Promise<void> {
  const { nats, nc, jsm, destroy } = await startTestBus({ streams: ["records", "callback"] });
  natsServer = nats.pid;
  // The audit log as Audit defines it; here the bench appends to it in Audit's place.
  await ensureStream(jsm, auditLogStream({ replicas: 1, maxBytes: 0 }));
  const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-consumers-"));
  const running: ServiceProcess[] = [];
  const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 60_000 });
  try {
    const common = {
      NATS_URL: nats.url,
      TOOLMESH_DATA_DIR: dataDir,
      TOOLMESH_JWT_SECRET: randomBytes(32).toString("hex"),
      LOG_LEVEL: "info",
    };
    if (profileDir) {
      for (const n of ["callback", "memory-writer"])
        await mkdir(path.join(profileDir, n), { recursive: true });
    }
    const figures: Figure[] = [];
    // What one acked write costs on this nats-server.
    const floor = await measureJetStreamFloor(nc, nats.pid, 5);
    const consumers = [
      {
        key: "callback",
        name: "callback (outcomes broadcast, usage counted)",
        durable: busAccess.callback.durables.auditLog,
        start: () =>
          startService(
            "callback",
            { ...common, TOOLMESH_CALLBACK_PORT: "0", ...profileEnv("callback") },
            { timeoutMs: 60_000 },
          ),
      },
      {
        key: "memory",
        name: "memory-writer (calls written)",
        durable: busAccess["memory-writer"].durables.auditLog,
        start: () =>
          startService(
            "memory-writer",
            { ...common, ...profileEnv("memory-writer") },
            { readyPattern: '"msg":"ready"', timeoutMs: 60_000 },
          ),
      },
    ].filter((c) => only === "" || only === c.key);

    for (const consumer of consumers) {
      // A first start makes the durable at the log's end; what is appended after waits for it.
      const first = await consumer.start();
      await eventually(
        () => jsm.consumers.info(streamNames.auditLog, consumer.durable),
        30_000,
        `${consumer.durable}'s durable consumer on the audit log`,
      );
      await first.stop();
      const last = (await jsm.streams.info(streamNames.auditLog)).state.last_seq;
      await appendCalls(jsm, publisher, total);
      const blocks = (await jsm.streams.info(streamNames.auditLog)).state.last_seq - last;
      const { figure, process } = await measure(
        consumer.name,
        consumer.start,
        jsm,
        consumer.durable,
        blocks,
      );
      running.push(process);
      figures.push(figure);
      await process.stop();
    }
    if (consumers.some((c) => c.key === "callback")) {
      const broadcast = await jsm.streams.info(streamNames.callback);
      if (broadcast.state.messages !== total)
        throw new Error(`expected ${total} broadcasts, found ${broadcast.state.messages}`);
    }
    if (consumers.some((c) => c.key === "memory")) {
      const lines = await countLines(path.join(dataDir, "memory"));
      if (lines !== 2 * total)
        throw new Error(`expected ${2 * total} memory lines, found ${lines}`);
    }
    await nc.close();

    const rows = figures.map(
      (f) =>
        `| ${f.consumer} | ${f.calls} | ${f.blocks} | ${f.seconds.toFixed(2)} | ${Math.round(f.rate)} | ≥ 5000 | ${f.consumerCpu.toFixed(3)} | ${f.natsCpu.toFixed(3)} | ${
          Object.entries(f.writes)
            .filter(([, n]) => n >= 0.0005)
            .map(([stream, n]) => `${stream} ${n.toFixed(3)}`)
            .join(", ") || "none"
        } |`,
    );
    const text = [
      "## Consumers",
      "",
      runLine("npm run bench:consumers"),
      "",
      `Callback and memory-writer follow the audit log. Each is started once (its durable consumer is made at the log's end) and stopped; the records of ${total} calls of ${agents} agents — a start and an end record each, chained as Audit chains them, ${blockRecords} records a block (what Audit makes of calls at concurrency 64) — are appended to the log; the consumer is started again and timed from its ready line until it has acked the last block. Audit's own figures are in "Audit at scale".`,
      "",
      "| consumer | calls | log blocks | seconds | calls/s | target | consumer CPU ms/call | nats-server CPU ms/call | messages it stored a call |",
      "|---|---:|---:|---:|---:|---|---:|---:|---|",
      ...rows,
      "",
      `The JetStream floor on this nats-server (\`sync_interval: always\`, an fsync before every ack): ${floor.writesPerSecond.toFixed(0)} acked writes/s over four streams, ${floor.natsCpuUsPerWrite.toFixed(0)} µs of nats-server CPU each. Callback stores one broadcast a call on the callback feed — a group of 16 or more (the blocks that arrive while the group before is stored) as one atomic batch, one commit — and writes each usage key a block touches once a second; memory-writer writes nothing to JetStream (its fsyncs are of its own files, grouped per agent).`,
      "",
    ].join("\n");
    process.stdout.write(`${text}\n`);
    await writeResultsFile(text);
  } finally {
    publisher.close();
    await Promise.allSettled(running.map((p) => p.stop()));
    await destroy();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Lines in every file under dir. */
async function countLines(dir: string): Promise<number> {
  let n = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const text = await readFile(path.join(entry.parentPath, entry.name), "utf8");
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  }
  return n;
}

await main();
