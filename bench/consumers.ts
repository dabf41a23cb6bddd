import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { publishEvent, subjects } from "@toolmesh/nats";
import { CallbackEventSchema, CallStatus, type Outcome, OutcomeSchema } from "@toolmesh/proto";
import {
  consumerDrained,
  type ServiceProcess,
  startService,
  startTestBus,
} from "@toolmesh/testkit";
import type { JetStreamClient, JetStreamManager, PubAck } from "nats";
import { measureJetStreamFloor } from "./jetstream-floor.js";
import { cpuMs } from "./proc.js";
import { writeResultsFile } from "./results-file.js";

// npm run bench:consumers: how fast Callback broadcasts outcomes and memory-writer writes
// callback events. N records are pushed straight into each consumer's stream while it is
// stopped; the consumer then starts and the rate is the backlog it works off per second, from
// its ready line until its durable consumer has acked the last record.
const total = Number(process.env.BENCH_CONSUMER_RECORDS ?? 20_000);
const agents = Number(process.env.BENCH_CONSUMER_AGENTS ?? 16);
const only = process.env.BENCH_ONLY ?? "";
const profileDir = process.env.BENCH_PROFILE_DIR;
const statuses = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED];
let natsServer = 0;
/** JetStream writes Callback makes per outcome: the call key, trace event, broadcast and its marked rewrite. */
const CALLBACK_WRITES = 4;
let bucketBytesPerCall = 0;

function outcome(i: number): Outcome {
  const status = statuses[i % 3] as CallStatus;
  return create(OutcomeSchema, {
    callId: `bench-${i}-${randomBytes(4).toString("hex")}`,
    traceId: randomBytes(16).toString("hex"),
    tool: `bench.tool${i % 8}`,
    agentId: `bench-agent-${i % agents}`,
    userId: "bench-user",
    status,
    ...(status === CallStatus.SUCCESS
      ? { output: { rows: i, items: [{ id: i, name: "row", ok: true }], note: "bench" } }
      : {}),
    ...(status === CallStatus.FAILURE
      ? { error: { code: "backend_error", message: "the backend refused" } }
      : {}),
    ...(status === CallStatus.INTERRUPTED ? { reason: "timeout" } : {}),
    durationMs: 3,
    attempts: 1,
    startedAt: timestampFromMs(Date.now() - 3),
    finishedAt: timestampFromMs(Date.now()),
    source: "dispatcher",
  });
}

/** Publishes every value, keeping `window` publishes in flight. */
async function publishAll<Desc extends DescMessage>(
  js: JetStreamClient,
  schema: Desc,
  values: MessageShape<Desc>[],
  subjectOf: (v: MessageShape<Desc>) => string,
  idOf: (v: MessageShape<Desc>) => string,
  window = 512,
): Promise<void> {
  const inFlight = new Set<Promise<PubAck>>();
  for (const value of values) {
    const p = publishEvent(js, subjectOf(value), schema, value, { msgId: idOf(value) });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= window) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

async function ackFloor(jsm: JetStreamManager, stream: string, durable: string): Promise<number> {
  const c = await jsm.consumers.info(stream, durable).catch(() => undefined);
  return c?.ack_floor.stream_seq ?? 0;
}

interface Figure {
  consumer: string;
  records: number;
  seconds: number;
  rate: number;
  /** CPU ms per record of the consumer and of nats-server while it worked. */
  consumerCpu: number;
  natsCpu: number;
}

/** Starts a consumer on its backlog and measures how fast it works it off. */
async function measure(
  name: string,
  start: () => Promise<ServiceProcess>,
  jsm: JetStreamManager,
  stream: string,
  durable: string,
  firstSeq: number,
): Promise<{ figure: Figure; process: ServiceProcess }> {
  const process = await start();
  const pid = process.child.pid ?? 0;
  const cpu0 = [cpuMs(pid), cpuMs(natsServer)];
  const t0 = performance.now();
  const done0 = Math.max(0, (await ackFloor(jsm, stream, durable)) - firstSeq + 1);
  await consumerDrained(jsm, stream, durable, 600_000, 20);
  const t1 = performance.now();
  const cpu1 = [cpuMs(pid), cpuMs(natsServer)];
  const records = total - done0;
  const seconds = (t1 - t0) / 1000;
  return {
    figure: {
      consumer: name,
      records,
      seconds,
      rate: records / seconds,
      consumerCpu: ((cpu1[0] ?? 0) - (cpu0[0] ?? 0)) / records,
      natsCpu: ((cpu1[1] ?? 0) - (cpu0[1] ?? 0)) / records,
    },
    process,
  };
}

const profileEnv = (name: string): Record<string, string> =>
  profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.join(profileDir, name)}` } : {};

async function main(): Promise<void> {
  const { nats, nc, jsm, destroy } = await startTestBus({
    streams: ["outcome", "trace", "callback"],
  });
  natsServer = nats.pid;
  const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-consumers-"));
  const running: ServiceProcess[] = [];
  try {
    const js = nc.jetstream();
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
    const outcomes = Array.from({ length: total }, (_, i) => outcome(i));
    // What one acked write costs on this nats-server: Callback makes four per outcome.
    const floor = await measureJetStreamFloor(nc, nats.pid, 5);

    if (only === "" || only === "callback") {
      const first = (await jsm.streams.info("TOOLMESH_OUTCOME")).state.last_seq + 1;
      await publishAll(
        js,
        OutcomeSchema,
        outcomes,
        (o) => subjects.outcome("dispatcher", o.callId),
        (o) => o.callId,
      );
      const { figure, process } = await measure(
        "callback (outcomes broadcast)",
        () =>
          startService(
            "callback",
            { ...common, TOOLMESH_CALLBACK_PORT: "0", ...profileEnv("callback") },
            { timeoutMs: 60_000 },
          ),
        jsm,
        "TOOLMESH_OUTCOME",
        "callback",
        first,
      );
      running.push(process);
      figures.push(figure);
      const bucket = await jsm.streams.info("KV_toolmesh-callback");
      bucketBytesPerCall = bucket.state.bytes / total;
      const broadcast = await jsm.streams.info("TOOLMESH_CALLBACK");
      if (broadcast.state.messages !== total) {
        throw new Error(`expected ${total} callback events, found ${broadcast.state.messages}`);
      }
      await process.stop();
    }

    if (only === "" || only === "memory") {
      // Callback events published straight into the stream, so the writer is measured alone.
      await jsm.streams.purge("TOOLMESH_CALLBACK");
      const first = (await jsm.streams.info("TOOLMESH_CALLBACK")).state.last_seq + 1;
      const events = outcomes.map((o) =>
        create(CallbackEventSchema, {
          callId: o.callId,
          traceId: o.traceId,
          tool: o.tool,
          agentId: o.agentId,
          userId: o.userId,
          status: o.status,
          ...(o.output ? { output: o.output } : {}),
          ...(o.error ? { error: o.error } : {}),
          reason: o.reason,
          durationMs: o.durationMs,
          attempts: o.attempts,
          ...(o.finishedAt ? { time: o.finishedAt } : {}),
        }),
      );
      await publishAll(
        js,
        CallbackEventSchema,
        events,
        (e) => subjects.callback("success", e.tool),
        (e) => `memory-${e.callId}`,
      );
      const { figure, process } = await measure(
        "memory-writer (calls written)",
        () =>
          startService(
            "memory-writer",
            { ...common, ...profileEnv("memory-writer") },
            { readyPattern: '"msg":"ready"', timeoutMs: 60_000 },
          ),
        jsm,
        "TOOLMESH_CALLBACK",
        "memory-writer",
        first,
      );
      running.push(process);
      figures.push(figure);
      await process.stop();
      const lines = await countLines(path.join(dataDir, "memory"));
      if (lines !== 2 * total)
        throw new Error(`expected ${2 * total} memory lines, found ${lines}`);
    }
    await nc.close();

    const rows = figures.map(
      (f) =>
        `| ${f.consumer} | ${f.records} | ${f.seconds.toFixed(2)} | ${Math.round(f.rate)} | ≥ 5000 | ${f.consumerCpu.toFixed(3)} | ${f.natsCpu.toFixed(3)} |`,
    );
    const text = [
      "## Consumers",
      "",
      `${new Date().toISOString()} · ${os.cpus()[0]?.model ?? "cpu"} × ${os.cpus().length} · Node ${process.version} · ${total} records · ${agents} agents · load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")} at the end · \`npm run bench:consumers\``,
      "",
      "Records pushed straight into each consumer's input stream while it is stopped; then it is started and timed until it has acked the last one. Audit's figures are in \"Audit at scale\".",
      "",
      "| consumer | records | seconds | records/s | target | consumer CPU ms/record | nats-server CPU ms/record |",
      "|---|---|---|---|---|---|---|",
      ...rows,
      "",
      `The JetStream floor on this nats-server (\`sync_interval: always\`, an fsync before every ack): ${floor.writesPerSecond.toFixed(0)} acked writes/s over four streams, ${floor.natsCpuUsPerWrite.toFixed(0)} µs of nats-server CPU each. Callback writes ${CALLBACK_WRITES} times per outcome (the call's key, its trace event, the broadcast, the key written again marked for usage to count), so it cannot broadcast more than about ${(floor.writesPerSecond / CALLBACK_WRITES).toFixed(0)} outcomes/s here, nor spend less than ${((CALLBACK_WRITES * floor.natsCpuUsPerWrite) / 1000).toFixed(3)} ms of nats-server CPU on one; memory-writer writes nothing to JetStream (its fsyncs are of its own files, grouped per agent).`,
      "",
      ...(bucketBytesPerCall
        ? [
            `Callback bucket: ${Math.round(bucketBytesPerCall)} bytes per call (calls.<id>, while it lives).`,
            "",
          ]
        : []),
    ].join("\n");
    process.stdout.write(`${text}\n`);
    await writeResultsFile(text);
  } finally {
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
