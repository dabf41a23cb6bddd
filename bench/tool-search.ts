import { create } from "@bufbuild/protobuf";
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { ToolSchema, type ToolSpec, ToolSpecSchema, ToolStatus } from "@toolmesh/proto";
import { allowSpec, eventually, startStack } from "@toolmesh/testkit";
import { ToolSearch } from "../services/dispatcher/src/catalog/tool-search.js";
import { percentile } from "./closed-loop.js";
import { runLine, writeResultsFile } from "./results-file.js";

// npm run bench:search: `search_tools` among BENCH_SEARCH_TOOLS registered tools (1,000), granted
// to the agent unlisted (callable, found by search) — the index alone in this process,
// SearchTools over gRPC, and search_tools over /mcp (2026-07-28, the official SDK client's
// callTool) against a stack — p50/p95/p99 of BENCH_SEARCH_QUERIES searches each, every one of
// which must rank its tool first. Writes the "Tool search" section of bench/results.md.
const N = Number(process.env.BENCH_SEARCH_TOOLS ?? 1000);
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES ?? 500);
const CONCURRENCY = 16;
const DOMAINS = ["billing", "crm", "hr", "support", "warehouse", "marketing", "legal", "fleet"];
const OBJECTS = ["invoice", "ticket", "contract", "shipment", "employee", "campaign", "vehicle"];
const VERBS = ["create", "update", "archive", "export", "approve", "list", "fetch", "merge"];

const say = (line: string) => process.stderr.write(`${line}\n`);
const summary = (latencies: number[]) => {
  const sorted = [...latencies].sort((a, b) => a - b);
  return [0.5, 0.95, 0.99].map((q) => percentile(sorted, q).toFixed(2)).join(" / ");
};

/** The i-th tool: a name, a description and a schema as varied as a real registry's. */
function toolAt(i: number): ToolSpec {
  const domain = DOMAINS[i % DOMAINS.length] as string;
  const object = OBJECTS[Math.floor(i / DOMAINS.length) % OBJECTS.length] as string;
  const verb = VERBS[Math.floor(i / (DOMAINS.length * OBJECTS.length)) % VERBS.length] as string;
  return create(ToolSpecSchema, {
    name: `${domain}.${verb}-${object}-${i}`,
    description: `${verb} a ${object} of the ${domain} system (variant ${i}); returns the ${object} record.`,
    category: domain,
    inputSchema: {
      type: "object",
      properties: {
        [`${object}_id`]: { type: "string", description: `The ${object}'s id` },
        region: { type: "string", description: `Sales region ${i % 17}` },
      },
    },
    status: ToolStatus.ACTIVE,
    // Nothing listens there: a search never calls a tool.
    runtime: { kind: { case: "remote", value: { url: "http://127.0.0.1:9/invoke" } } },
  });
}

/** Searches, each for one tool by words of its own description, and that tool's name. */
const queries = Array.from({ length: QUERIES }, (_, q) => {
  const i = (q * 7919) % N;
  const spec = toolAt(i);
  return { text: `${spec.description.split(" (")[0]} variant ${i}`, want: spec.name };
});

const specs = Array.from({ length: N }, (_, i) => toolAt(i));
const tools = specs.map((spec) => create(ToolSchema, { spec }));
const inProcess: number[] = [];
const search = new ToolSearch({ all: () => tools });
for (const { text, want } of queries) {
  const started = performance.now();
  const hits = search.search(text, 10, () => true);
  inProcess.push(performance.now() - started);
  if (hits[0]?.tool.spec?.name !== want) throw new Error(`in-process: "${text}" missed ${want}`);
}
say(`in-process index: p50/p95/p99 ${summary(inProcess)} ms`);

const stack = await startStack();
try {
  const admin = stack.as(stack.adminToken);
  // As an agent with a thousand tools would be set up: callable, found by search, not listed.
  await stack.permissionClient.grant(
    { grant: { ...allowSpec("agent:search-agent", "glob:**", ["*"]), unlisted: true } },
    admin,
  );
  const token = await stack.agentToken("search-agent");
  const agent = stack.as(token);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < N; i = next++)
        await stack.registryClient.registerTool({ tool: specs[i] }, admin);
    }),
  );
  const last = specs[N - 1]?.name ?? "";
  // The Dispatcher follows the registry bucket: its search knows the last tool once it has all.
  await eventually(
    async () => {
      const found = await stack.dispatcherClient().searchTools({ query: last, limit: 1 }, agent);
      if (found.tools[0]?.tool?.spec?.name !== last) throw new Error(`${last} not found yet`);
    },
    300_000,
    `the Dispatcher to know ${last}`,
    200,
  );

  const rpc: number[] = [];
  const dispatcher = stack.dispatcherClient();
  for (const { text, want } of queries) {
    const started = performance.now();
    const found = await dispatcher.searchTools({ query: text, limit: 10 }, agent);
    rpc.push(performance.now() - started);
    if (found.tools[0]?.tool?.spec?.name !== want) throw new Error(`SearchTools missed ${want}`);
  }
  say(`SearchTools: p50/p95/p99 ${summary(rpc)} ms`);

  const client = new McpClient(
    { name: "bench-search", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  const mcp: number[] = [];
  for (const { text, want } of queries) {
    const started = performance.now();
    const result = await client.callTool({ name: "search_tools", arguments: { query: text } });
    mcp.push(performance.now() - started);
    const first = (result.structuredContent as { tools?: { name: string }[] })?.tools?.[0];
    if (first?.name !== want) throw new Error(`search_tools missed ${want}`);
  }
  await client.close();
  say(`search_tools over /mcp: p50/p95/p99 ${summary(mcp)} ms`);

  const text = [
    "## Tool search",
    "",
    runLine("npm run bench:search"),
    "",
    `${N} registered tools, granted to the agent unlisted; ${QUERIES} searches each by words of one tool's description, every one of which ranked its tool first.`,
    "",
    "| search | p50 / p95 / p99 |",
    "|---|---|",
    `| the index alone (BM25 and the grant filter, in process) | ${summary(inProcess)} ms |`,
    `| SearchTools over gRPC, round trip | ${summary(rpc)} ms |`,
    `| search_tools over /mcp (2026-07-28, official SDK client), round trip | ${summary(mcp)} ms |`,
  ].join("\n");
  await writeResultsFile(text);
  process.stdout.write(`${text}\n`);
} finally {
  await stack.stop();
}
process.exit(0);
