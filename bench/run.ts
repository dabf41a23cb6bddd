import { randomBytes } from "node:crypto";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import {
  type InvokeRequest,
  InvokeRequestSchema,
  type InvokeResponse,
  ToolBackendService,
  ToolSchema,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/sdk";
import { allowSpec, chainServices, eventually, repoRoot, startStack } from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { GrpcRuntime } from "../services/dispatcher/src/runtimes/grpc-runtime.js";
import { bytesMethod } from "./bytes-method.js";
import { noopDispatch, spawnScript, unaryCall } from "./chain-client.js";
import { type Call, closedLoop, percentile } from "./closed-loop.js";
import { countFsyncs, straceAvailable } from "./fsyncs.js";
import { measureJetStreamFloor } from "./jetstream-floor.js";
import { cpuMs, PeakRss } from "./proc.js";
import { ratioRounds } from "./ratio-rounds.js";
import { type Cell, type FsyncRun, type RunSettings, writeResults } from "./results.js";
import { callWrites, streamCounters } from "./stream-writes.js";
import { CONSUMERS, consumersDone, lagAfter } from "./sustained.js";

// npm run bench:chain (the first section of npm run bench): the full chain against its floors — a
// raw grpc-js echo (one hop) and a raw grpc-js pass-through proxy to the same no-op backend (the
// gateway's two hops, none of its work) — at concurrency 1, 8, 64 and 256, on the Dispatcher's
// main port and its grpc-js port, with the JetStream writes each chain cell's calls cost counted
// from nats-server. Every process (nats-server, the services npm start runs around a call, the
// backends) is started here.
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
/**
 * Before its first cell, each path runs this long at the highest concurrency, so every process
 * has compiled its hot code: at concurrency 1 a cold process spends most of a call in V8's
 * interpreter and optimizing compiler (perf: LoadIC, baseline builtins, GraphReducer), which
 * measures JIT warm-up, not a long-running service.
 */
const jitWarmupSeconds = Number(process.env.BENCH_JIT_WARMUP_SECONDS ?? 3);
const warmedPaths = new Set<string>();
const concurrencies = (process.env.BENCH_CONCURRENCY ?? "1,8,64,256").split(",").map(Number);

/** Processes whose CPU time the bench reports, by role. */
const watched = new Map<string, number>();

function cpuSnapshot(): Map<string, number> {
  const out = new Map<string, number>();
  for (const [role, pid] of watched) out.set(role, cpuMs(pid));
  return out;
}

async function measure(
  name: string,
  concurrency: number,
  call: Call,
  /** Given for a path through the chain: its writes are counted and its consumers waited for. */
  jsm?: JetStreamManager,
): Promise<Cell> {
  const run = (durationMs: number, record: boolean, workers = concurrency) =>
    closedLoop(`${name} c${workers}`, call, durationMs, workers, record);
  if (!warmedPaths.has(name)) {
    warmedPaths.add(name);
    await run(jitWarmupSeconds * 1000, false, Math.max(...concurrencies));
  }
  await run(warmupSeconds * 1000, false);
  // The warm-up's records are chained, broadcast and written before the cell's calls begin.
  if (jsm) await consumersDone(jsm);
  const counted = jsm ? await streamCounters(jsm) : undefined;
  const before = cpuSnapshot();
  const rss = new PeakRss(() => watched);
  const { latencies, errors, elapsed } = await run(seconds * 1000, true);
  const clientCpu = cpuMs(process.pid);
  // CPU per call counts each process until the consumers are done with the cell's calls.
  if (jsm) await consumersDone(jsm);
  const peakRssMb = rss.stop();
  const after = cpuSnapshot();
  after.set("client", clientCpu);
  const writes =
    jsm && counted
      ? callWrites(counted, await streamCounters(jsm), latencies.length + errors)
      : undefined;
  const cpuPerCall: Record<string, number> = {};
  for (const [role, ms] of after) {
    const used = ms - (before.get(role) ?? 0);
    if (used > 0 && latencies.length > 0) cpuPerCall[role] = used / latencies.length;
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => percentile(latencies, q);
  const cell: Cell = {
    name,
    concurrency,
    rps: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    errors,
    cpuPerCall,
    peakRssMb,
    ...(writes ? { writes } : {}),
  };
  process.stderr.write(
    `${name} c${concurrency}: ${cell.rps.toFixed(0)} rps, p50 ${cell.p50.toFixed(3)} ms, p99 ${cell.p99.toFixed(3)} ms${errors ? `, ${errors} errors` : ""}${writes ? `, ${writes.pathWrites.toFixed(2)} writes and ${writes.records.toFixed(2)} records a call on its path` : ""}\n`,
  );
  return cell;
}

const ECHO = "baseline: grpc-js echo";
const PROXY = "baseline: grpc-js pass-through proxy";
/** The port agents use by default: gRPC's binary calls take the fast path, the rest connect-node. */
const CHAIN_MAIN = "chain via main port (default)";
/** The Dispatcher's second listener, grpc-js alone. */
const CHAIN_GRPC_JS = "chain via grpc-js port";
/** The services npm start runs around a call: the chain and every consumer of its records. */
const STACK_SERVICES = [...new Set([...chainServices, ...CONSUMERS.map((c) => c.service)])];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
async function main(): Promise<void> {
  const stack = await startStack({
    // The consumers run too: they share the machine with the chain, as under npm start.
    services: STACK_SERVICES,
    serviceEnv: {
      // BENCH_PROFILE_DIR=/tmp/prof writes a CPU profile of the dispatcher when it stops.
      dispatcher: process.env.BENCH_PROFILE_DIR
        ? { NODE_OPTIONS: `--import=${path.join(repoRoot, "bench", "cpu-profile.mjs")}` }
        : {},
    },
  });
  cleanups.push(() => stack.stop());
  const { nats, registry, dispatcher, adminToken } = stack;
  const fastPort = stack.dispatcherGrpcPort;

  watched.set("client", process.pid);
  for (const name of STACK_SERVICES) watched.set(name, stack.service(name).child.pid ?? 0);
  if (nats.pid) watched.set("nats", nats.pid);
  const echo = await spawnScript("bench/echo-server.ts", {});
  watched.set("echo", echo.child.pid ?? 0);
  cleanups.push(() => echo.child.kill());
  const noop = await spawnScript("bench/noop-tool.ts", {
    TOOLMESH_REGISTRY_URL: registry.url,
    TOOLMESH_TOOL_TOKEN: adminToken,
  });
  cleanups.push(() => noop.child.kill());
  watched.set("backend", noop.child.pid ?? 0);

  await stack.permissionClient.grant(
    { grant: allowSpec("agent:bench-agent", "tool:bench.noop", ["bench:run"]) },
    stack.as(adminToken),
  );
  const agentToken = await stack.agentToken("bench-agent");
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${agentToken}`);

  const echoMetadata = new grpc.Metadata();
  const echoClient = new grpc.Client(`127.0.0.1:${echo.port}`, grpc.credentials.createInsecure());
  const echoCall = unaryCall(echoClient, bytesMethod("/bench.Echo/Echo"), () => echoMetadata);
  const payload = Buffer.from(randomBytes(32));

  const chainCall = (port: number) => noopDispatch(port, () => metadata);
  // Wait until the dispatcher's snapshots hold the tool and the grant.
  await eventually(chainCall(fastPort), 10_000, "the Dispatcher to run bench.noop");

  const invokeMethod = grpcServiceDefinition(ToolBackendService).invoke as grpc.MethodDefinition<
    InvokeRequest,
    InvokeResponse
  >;
  const invokeRequest = create(InvokeRequestSchema, { tool: "bench.noop", arguments: { n: 1 } });
  const backendGrpcJs = new grpc.Client(
    `127.0.0.1:${noop.port}`,
    grpc.credentials.createInsecure(),
  );
  const invokeGrpcJs: Call = () =>
    new Promise((resolve, reject) => {
      const call = backendGrpcJs.makeServerStreamRequest(
        invokeMethod.path,
        invokeMethod.requestSerialize,
        invokeMethod.responseDeserialize,
        invokeRequest,
        new grpc.Metadata(),
        {},
      );
      call.on("data", () => {});
      call.on("error", reject);
      call.on("end", () => resolve());
    });
  const backendConnect = createClient(
    ToolBackendService,
    createGrpcTransport({ baseUrl: `http://127.0.0.1:${noop.port}` }),
  );
  const invokeConnect: Call = async () => {
    for await (const _ of backendConnect.invoke(invokeRequest)) {
      // drain the stream
    }
  };

  // The Dispatcher's own client for backends (grpc-channel.ts), run here in the bench's process.
  const dispatcherClient = new GrpcRuntime(4 * 1024 * 1024);
  cleanups.push(() => void dispatcherClient.close());
  const neverAborted = new AbortController().signal;
  const invokeTool = create(ToolSchema, { spec: { name: "bench.noop" } });
  const invokeDispatcher: Call = async () => {
    const result = await dispatcherClient.invokeAt(`127.0.0.1:${noop.port}`, {
      tool: invokeTool,
      request: invokeRequest,
      signal: neverAborted,
      onEvent: () => {},
    });
    if (!result.ok) throw new Error(result.error.message);
  };

  const proxy = await spawnScript("bench/proxy-server.ts", {
    BENCH_BACKEND_ADDRESS: `127.0.0.1:${noop.port}`,
  });
  cleanups.push(() => proxy.child.kill());
  watched.set("proxy", proxy.child.pid ?? 0);
  const proxyClient = new grpc.Client(`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure());
  const proxyInvoke = unaryCall(
    proxyClient,
    bytesMethod("/bench.Proxy/Invoke"),
    () => echoMetadata,
  );
  const invokeBytes = Buffer.from(toBinary(InvokeRequestSchema, invokeRequest));
  const proxyCall: Call = () => proxyInvoke(invokeBytes).then(() => {});

  const cells: Cell[] = [];
  const chainFast = chainCall(fastPort);
  const chainMain = chainCall(dispatcher.port);
  const jsm = await stack.nc.jetstreamManager();
  const only = process.env.BENCH_ONLY;
  // The c1 added p50 and the c64 ratio again, from short alternating windows right after that
  // concurrency's cells (bench/ratio-rounds.ts says why). Right after, not at the end: at c1 a
  // call waits for an fsync, and for up to a minute after the c64 cells the disk is still busy
  // writing back what they wrote (rounds there measured 1.05–1.66 ms, after a minute's rest
  // 0.62–0.73 ms).
  const roundCount = Number(process.env.BENCH_RATIO_ROUNDS ?? 6);
  const rounds: RunSettings["rounds"] = { c1: undefined, c64: undefined };
  for (const c of concurrencies) {
    if (only !== "chain") {
      cells.push(await measure(ECHO, c, () => echoCall(payload).then(() => {})));
      cells.push(await measure(PROXY, c, proxyCall));
    }
    cells.push(await measure(CHAIN_MAIN, c, chainMain, jsm));
    cells.push(await measure(CHAIN_GRPC_JS, c, chainFast, jsm));
    if (only !== "chain" && (c === 1 || c === 64)) {
      cells.push(await measure("backend Invoke, grpc-js client", c, invokeGrpcJs));
      cells.push(await measure("backend Invoke, connect-node client", c, invokeConnect));
      cells.push(await measure("backend Invoke, Dispatcher's client", c, invokeDispatcher));
    }
    if (only !== "chain" && (c === 1 || c === 64) && roundCount > 0)
      rounds[c === 1 ? "c1" : "c64"] = await ratioRounds({
        proxy: proxyCall,
        chain: chainMain,
        concurrency: c,
        seconds: Number(process.env.BENCH_RATIO_SECONDS ?? 3),
        rounds: roundCount,
        jsm,
      });
  }
  // The fsyncs behind those writes, counted on nats-server in runs of their own (strace slows it).
  const fsyncs: FsyncRun[] = [];
  if (process.env.BENCH_FSYNCS !== "0" && straceAvailable() && nats.pid) {
    for (const c of concurrencies.filter((n) => n === 1 || n === 64)) {
      await consumersDone(jsm);
      const count = await countFsyncs(nats.pid, async () => {
        const run = await closedLoop(`fsyncs c${c}`, chainMain, seconds * 1000, c, false);
        await consumersDone(jsm);
        return run.calls + run.errors;
      });
      process.stderr.write(
        `fsyncs at c${c}: ${count.total.toFixed(2)} a call over ${count.calls} calls\n`,
      );
      fsyncs.push({ name: CHAIN_MAIN, concurrency: c, count });
    }
  }
  // What one acked JetStream write costs here: with fsync on every write it bounds the chain.
  const floor = await measureJetStreamFloor(stack.nc, nats.pid, seconds);
  const floorOne = await measureJetStreamFloor(stack.nc, nats.pid, seconds, 1);
  process.stderr.write(
    `JetStream floor: ${floor.writesPerSecond.toFixed(0)} acked writes/s at 64 in flight, nats-server ${floor.natsCpuUsPerWrite.toFixed(0)} µs CPU per write; ${floorOne.writesPerSecond.toFixed(0)}/s at 1 in flight\n`,
  );
  // A sustained run on the port agents use by default, then how long each consumer needs to
  // catch up with it.
  const sustained = {
    seconds: Number(process.env.BENCH_SUSTAINED_SECONDS ?? 30),
    concurrency: 64,
    calls: 0,
  };
  const lag =
    only === "chain" || sustained.seconds <= 0
      ? []
      : await lagAfter(jsm, async () => {
          const run = await closedLoop(
            "sustained chain",
            chainMain,
            sustained.seconds * 1000,
            sustained.concurrency,
            false,
          );
          sustained.calls = run.calls;
        });
  for (const row of lag)
    process.stderr.write(
      `${row.service}: lag ${row.lagAtEnd} at the end of the sustained run, zero after ${row.drainSeconds.toFixed(1)} s\n`,
    );
  await writeResults(cells, {
    floor,
    floorOne,
    fsyncs,
    sustained: { ...sustained, lag },
    rounds,
    seconds,
    warmupSeconds,
    jitWarmupSeconds,
    concurrencies,
    names: { echo: ECHO, proxy: PROXY, main: CHAIN_MAIN, grpcJs: CHAIN_GRPC_JS },
  });
}

try {
  await main();
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => {});
}
process.exit(0);
