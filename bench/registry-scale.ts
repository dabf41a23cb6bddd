import { Code } from "@toolmesh/errors";
import { ToolStatus } from "@toolmesh/proto";
import { allowSpec, retryWhile, startStack } from "@toolmesh/testkit";
import { percentile } from "./closed-loop.js";
import { rssMb } from "./proc.js";
import { runLine, writeResultsFile } from "./results-file.js";

// npm run bench:registry: the Registry with BENCH_REGISTRY_TOOLS tools (10,000): how long they take
// to register, ListTools keyword search p50/p99 over them, and what the Dispatcher's snapshot of
// them costs in RSS. Writes the "Registry at scale" section of bench/results.md.
const N = Number(process.env.BENCH_REGISTRY_TOOLS ?? 10_000);
const QUERIES = Number(process.env.BENCH_REGISTRY_QUERIES ?? 300);
const CONCURRENCY = 16;
const WORDS = ["weather", "invoice", "ticket", "search", "calendar", "mail", "report", "ledger"];

const say = (line: string) => process.stderr.write(`${line}\n`);

const stack = await startStack();
try {
  const admin = stack.as(stack.adminToken);
  const registry = stack.registryClient;
  await stack.permissionClient.grant(
    { grant: allowSpec("agent:scale-agent", "glob:scale.*", ["*"]) },
    admin,
  );
  const agent = stack.as(await stack.agentToken("scale-agent"));
  const dispatcherPid = stack.dispatcher.child.pid ?? 0;
  const registryPid = stack.registry.child.pid ?? 0;
  const before = { dispatcher: rssMb(dispatcherPid), registry: rssMb(registryPid) };

  const registerStarted = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < N; i = next++) {
        const word = WORDS[i % WORDS.length];
        await registry.registerTool(
          {
            tool: {
              name: `scale.tool-${i}`,
              version: "1.0.0",
              description: `Tool ${i} of the scale benchmark: looks up ${word} records by id.`,
              category: word,
              inputSchema: {
                type: "object",
                properties: { id: { type: "string", maxLength: 64 } },
                required: ["id"],
              },
              status: ToolStatus.ACTIVE,
              // Nothing listens there: a call fails, but only after the chain found the tool.
              runtime: { kind: { case: "remote", value: { url: "http://127.0.0.1:9/invoke" } } },
            },
          },
          admin,
        );
      }
    }),
  );
  const registerS = (performance.now() - registerStarted) / 1000;
  say(`registered ${N} tools in ${registerS.toFixed(1)} s`);

  // The Dispatcher follows the registry bucket: the last tool is callable once its snapshot has all.
  const last = `scale.tool-${N - 1}`;
  await retryWhile(
    () =>
      stack
        .dispatcherClient()
        .dispatch({ tool: last, arguments: { id: "x" }, timeoutMs: 1000 }, agent),
    [Code.NotFound],
    600_000,
    `the Dispatcher to know ${last}`,
  );
  const snapshotS = (performance.now() - registerStarted) / 1000;
  global.gc?.();
  const after = { dispatcher: rssMb(dispatcherPid), registry: rssMb(registryPid) };

  const latencies: number[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const keyword = WORDS[q % WORDS.length] as string;
    const started = performance.now();
    const page = await registry.listTools({ keyword, pageSize: 50 }, admin);
    latencies.push(performance.now() - started);
    if (page.tools.length === 0) throw new Error(`no tool matched "${keyword}"`);
  }
  latencies.sort((a, b) => a - b);
  const p50 = percentile(latencies, 0.5);
  const p99 = percentile(latencies, 0.99);
  say(`ListTools keyword p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`);

  const rows = [
    ["tools registered (RegisterTool, 16 at a time)", `${N} in ${registerS.toFixed(1)} s`],
    ["until the Dispatcher's snapshot held them all", `${snapshotS.toFixed(1)} s`],
    [
      `ListTools keyword search p50 / p99 (${QUERIES} queries, first page of 50)`,
      `${p50.toFixed(1)} / ${p99.toFixed(1)} ms`,
    ],
    [
      "Dispatcher RSS before / after (its registry snapshot)",
      `${before.dispatcher.toFixed(0)} / ${after.dispatcher.toFixed(0)} MB (+${(after.dispatcher - before.dispatcher).toFixed(0)} MB)`,
    ],
    [
      "Registry RSS before / after",
      `${before.registry.toFixed(0)} / ${after.registry.toFixed(0)} MB`,
    ],
  ];
  const text = [
    "## Registry at scale",
    "",
    runLine("npm run bench:registry"),
    "",
    "| figure | measured |",
    "|---|---|",
    ...rows.map(([what, value]) => `| ${what} | ${value} |`),
  ].join("\n");
  await writeResultsFile(text);
  process.stdout.write(`${text}\n`);
} finally {
  await stack.stop();
}
process.exit(0);
