import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { CallStatus, type LocalRuntimeSchema, RuntimeState, ToolSpecSchema } from "@toolmesh/proto";
import { eventually, localHttpRuntime, startStack } from "@toolmesh/testkit";
import { runLine, writeResultsFile } from "./results-file.js";

// npm run bench:pools: what warm pools buy a local tool, on a whole stack (nats-server and every
// service on free ports). First-call latency: BENCH_POOL_FIRST_RUNS fresh tools each, called once
// as an agent — cold (the call starts the process) and warm (min_instances 1, the instance already
// running). Throughput: a CPU-bound local tool (each call keeps its process busy for
// BENCH_POOL_BURN_MS) called BENCH_POOL_CALLS times at concurrency BENCH_POOL_CONCURRENCY, with
// max_instances 1 and 2 (both kept warm so no start is measured). The tool is
// services/dispatcher/test/http-tool.mjs. Writes the "Warm pools" section of bench/results.md.
const FIRST_RUNS = Number(process.env.BENCH_POOL_FIRST_RUNS ?? 5);
const CALLS = Number(process.env.BENCH_POOL_CALLS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_POOL_CONCURRENCY ?? 4);
const BURN_MS = Number(process.env.BENCH_POOL_BURN_MS ?? 5);

const stack = await startStack();
const text = await (async () => {
  try {
    const admin = stack.as(stack.adminToken);
    const token = await stack.agentToken("pool-bench");
    await stack.grantAll("pool-bench");
    const dispatcher = stack.dispatcherClient();
    const call = (tool: string, args: Record<string, number> = {}) =>
      dispatcher.dispatch({ tool, arguments: args }, stack.as(token)).then((res) => {
        if (res.status !== CallStatus.SUCCESS)
          throw new Error(`${tool}: ${CallStatus[res.status]} ${res.error?.message ?? ""}`);
        return res;
      });
    const register = async (name: string, pool: MessageInitShape<typeof LocalRuntimeSchema>) => {
      await stack.registryClient.registerTool(
        {
          tool: create(ToolSpecSchema, {
            name,
            description: "A local HTTP tool that answers with its pid, after burning CPU if asked.",
            inputSchema: { type: "object" },
            runtime: localHttpRuntime(pool),
          }),
        },
        admin,
      );
      // The Dispatcher sees the tool (and runs its warm instances) before it is measured.
      await eventually(async () => {
        const status = await dispatcher.getRuntimeStatus({ tool: name }, admin);
        const running = status.runtimes[0]?.instances.filter(
          (i) => i.state === RuntimeState.RUNNING,
        );
        if ((running?.length ?? 0) < (pool.minInstances ?? 0)) throw new Error(`${name} not warm`);
      }, 30_000);
    };
    const timed = async (run: () => Promise<unknown>) => {
      const started = performance.now();
      await run();
      return performance.now() - started;
    };

    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < FIRST_RUNS; i++) {
      await register(`bench.cold-${i}`, {});
      cold.push(await timed(() => call(`bench.cold-${i}`)));
      await register(`bench.warm-${i}`, { minInstances: 1 });
      warm.push(await timed(() => call(`bench.warm-${i}`)));
      process.stderr.write(
        `first call ${i + 1}: cold ${cold.at(-1)?.toFixed(1)} ms, warm ${warm.at(-1)?.toFixed(1)} ms\n`,
      );
    }
    let saved = 0n;
    for (let i = 0; i < FIRST_RUNS; i++)
      saved +=
        (await dispatcher.getRuntimeStatus({ tool: `bench.warm-${i}` }, admin)).runtimes[0]
          ?.startsSaved ?? 0n;

    const throughput = async (name: string, instances: number) => {
      await register(name, { minInstances: instances, maxInstances: instances });
      const burst = async (n: number) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < n) {
              next++;
              await call(name, { burn_ms: BURN_MS });
            }
          }),
        );
      };
      await burst(Math.min(200, CALLS));
      const ms = await timed(() => burst(CALLS));
      const status = (await dispatcher.getRuntimeStatus({ tool: name }, admin)).runtimes[0];
      const calls = (status?.instances ?? []).map((i) => String(i.calls)).join(" / ");
      const rps = CALLS / (ms / 1000);
      process.stderr.write(`${instances} instance(s): ${rps.toFixed(0)} calls/s (${calls})\n`);
      return { rps, calls };
    };
    const one = await throughput("bench.cpu-1", 1);
    const two = await throughput("bench.cpu-2", 2);

    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const ms = (values: number[]) => values.map((v) => v.toFixed(1)).join(", ");
    return [
      "## Warm pools",
      "",
      runLine("npm run bench:pools"),
      "",
      `A local HTTP tool (\`services/dispatcher/test/http-tool.mjs\`) called as an agent through the whole chain. First call: ${FIRST_RUNS} freshly registered tools each, called once; cold starts its process on that call, warm (\`min_instances: 1\`) finds it running (${saved} of ${FIRST_RUNS} counted as starts saved).`,
      "",
      "| first call | median ms | runs ms |",
      "|---|---:|---|",
      `| cold (the call starts the process) | ${median(cold).toFixed(1)} | ${ms(cold)} |`,
      `| warm (\`min_instances: 1\`) | ${median(warm).toFixed(1)} | ${ms(warm)} |`,
      "",
      `Throughput of a CPU-bound tool (each call burns ${BURN_MS} ms of CPU in the tool's process), ${CALLS} calls at concurrency ${CONCURRENCY} after 200 to warm up, every instance kept warm. The Dispatcher, nats-server and the other services share the same cores.`,
      "",
      "| instances | calls/s | calls per instance |",
      "|---|---:|---|",
      `| \`max_instances: 1\` | ${one.rps.toFixed(0)} | ${one.calls} |`,
      `| \`max_instances: 2\` | ${two.rps.toFixed(0)} | ${two.calls} (${(two.rps / one.rps).toFixed(2)}×) |`,
    ].join("\n");
  } finally {
    await stack.stop();
  }
})();
await writeResultsFile(text);
process.stdout.write(`${text}\n`);
process.exit(0);
