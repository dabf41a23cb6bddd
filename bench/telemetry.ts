// npm run bench:telemetry: what metrics and tracing cost per call, with OTLP export off and on.
// Not a test: it prints figures. Two measurements:
//  1. in-process: the telemetry work of one call alone (the Dispatcher's metrics, and its spans
//     with tracing off or exporting to a local OTLP/HTTP sink), CPU µs per call;
//  2. the whole chain (bench/run.ts, BENCH_ONLY=chain) twice, export off and on: the Dispatcher
//     process's CPU ms per call, read from /proc by that bench.
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { CallStatus, statusName } from "@toolmesh/proto";
import { startTracing, type Tracing } from "@toolmesh/telemetry";
import { repoRoot } from "@toolmesh/testkit";
import { CallSpans, dispatcherMetrics } from "../services/dispatcher/src/chain/telemetry.js";

const calls = Number(process.env.BENCH_TELEMETRY_CALLS ?? 100_000);
const chainSeconds = process.env.BENCH_SECONDS ?? "5";

/** An OTLP/HTTP receiver that accepts and discards, as a collector on the same host would. */
async function startSink(): Promise<{ url: string; spans: () => number; close(): void }> {
  let posts = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      posts++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => posts,
    close: () => server.close(),
  };
}

/** CPU µs per call of `work`, after a warm-up. */
async function cpuPerCall(work: (i: number) => void, flush?: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 5000; i++) work(i);
  await flush?.();
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    work(i);
    // Let the batch exporter run as it would between calls.
    if (i % 1000 === 999) await new Promise((resolve) => setImmediate(resolve));
  }
  await flush?.();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

function oneCall(
  tracing: Tracing | undefined,
  metrics: ReturnType<typeof dispatcherMetrics>,
  i: number,
) {
  if (tracing) {
    const spans = new CallSpans(
      tracing,
      {
        traceId: (i + 1).toString(16).padStart(32, "0"),
        callId: `call-${i}`,
        tool: "bench.noop",
        agentId: "bench",
      },
      { authStartedMs: Date.now() },
    );
    for (const step of ["resolve", "validate", "authorise", "execute"]) spans.step(step);
    spans.attempt(1).end({ ok: true, output: {} });
    spans.step("record");
    spans.end(CallStatus.SUCCESS);
  }
  const status = statusName(CallStatus.SUCCESS);
  metrics.calls.inc({ tool: "bench.noop", status });
  metrics.duration.observe({ tool: "bench.noop", status }, 0.002);
}

async function inProcess(sinkUrl: string) {
  const metrics = dispatcherMetrics();
  const off = await startTracing("bench", {});
  const on = await startTracing("bench", {
    OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
    OTEL_BSP_SCHEDULE_DELAY: "200",
  });
  const metricsOnly = await cpuPerCall((i) => oneCall(undefined, metrics, i));
  const spansOff = await cpuPerCall((i) => oneCall(off, metrics, i));
  const spansOn = await cpuPerCall(
    (i) => oneCall(on, metrics, i),
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
    },
  );
  await on.shutdown();
  return { metricsOnly, spansOff, spansOn };
}

/** Runs bench/run.ts for the chain only and returns the Dispatcher's CPU ms per call at each concurrency. */
async function chain(env: Record<string, string>): Promise<string[]> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(repoRoot, "bench", "run.ts")],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        BENCH_ONLY: "chain",
        BENCH_FSYNCS: "0",
        BENCH_SECONDS: chainSeconds,
        ...env,
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  await new Promise((resolve) => child.once("exit", resolve));
  return out.split("\n").filter((line) => line.startsWith("| chain via grpc-js port"));
}

const sink = await startSink();
const results = path.join(repoRoot, "bench", "results.md");
const kept = await readFile(results, "utf8").catch(() => undefined);
try {
  const micro = await inProcess(sink.url);
  // BENCH_TELEMETRY_CHAIN=0 skips the whole-chain runs (about a minute).
  const withChain = process.env.BENCH_TELEMETRY_CHAIN !== "0";
  const off = withChain ? await chain({}) : [];
  const on = withChain ? await chain({ OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }) : [];
  const lines = [
    `# telemetry cost (${new Date().toISOString()}, node ${process.version})`,
    "",
    `In-process, ${calls} calls, CPU µs per call:`,
    `- metrics only (calls counter + latency histogram): ${micro.metricsOnly.toFixed(2)}`,
    `- metrics + spans, export off: ${micro.spansOff.toFixed(2)}`,
    `- metrics + spans, OTLP export on (JSON to a local sink): ${micro.spansOn.toFixed(2)}`,
    "",
    "Whole chain via the grpc-js port (bench/run.ts, BENCH_ONLY=chain), export off then on:",
    "| path | concurrency | rps | p50 ms | p99 ms | × echo rps | errors | CPU ms per call |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...off.map((l) => l.replace("chain via grpc-js port", "chain, export off")),
    ...on.map((l) => l.replace("chain via grpc-js port", "chain, export on")),
    "",
    `OTLP posts received by the sink: ${sink.spans()}`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  // bench/run.ts rewrites bench/results.md; this run is not the benchmark of record.
  if (kept !== undefined) await writeFile(results, kept);
  sink.close();
}
