import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService, Effect, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { processCpuMs, processRssMb, startScriptedModel, startStack } from "@toolmesh/testkit";

// npm run bench:agent: what one ServiceAgent (the tool agent's process) costs idle and busy,
// against a scripted model (so the model's own time is not counted). Idle: RSS and CPU over
// BENCH_AGENT_IDLE_S seconds after start. Busy: BENCH_AGENT_WINDOWS windows sending messages
// without pause for BENCH_AGENT_BUSY_S seconds, each message two model replies (list_tools, then
// an answer) and one Registry read as the caller: messages a second, latency, CPU per message,
// RSS, and the heap still live once it has been idle a while. Prints its figures; writes nothing.
const IDLE_S = Number(process.env.BENCH_AGENT_IDLE_S ?? 30);
const BUSY_S = Number(process.env.BENCH_AGENT_BUSY_S ?? 60);
const WINDOWS = Number(process.env.BENCH_AGENT_WINDOWS ?? 8);

const model = await startScriptedModel([
  {
    match: "BUSY",
    turns: [{ toolCalls: [{ name: "list_tools", arguments: {} }] }, { text: "done" }],
  },
]);
const stack = await startStack({
  services: ["permission", "registry", "dispatcher", "tool-agent"],
  serviceEnv: { "tool-agent": { TOOLMESH_MODEL_URL: model.url } },
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
try {
  const admin = stack.as(stack.adminToken);
  for (const name of ["data.query", "data.insert", "mail.send"])
    await stack.registryClient.registerTool(
      {
        tool: {
          name,
          description: `The ${name} tool`,
          inputSchema: { type: "object" },
          runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:9" } } },
        },
      },
      admin,
    );
  await stack.permissionClient.grant(
    {
      grant: {
        principal: { kind: PrincipalKind.AGENT, id: "bench-bot" },
        resource: { kind: ResourceKind.GLOB, pattern: "data.*" },
        scopes: ["*"],
        effect: Effect.ALLOW,
        enabled: true,
      },
    },
    admin,
  );
  const token = await stack.agentToken("bench-bot");
  const agent = stack.service("tool-agent");
  const pid = agent.pid;
  console.log(
    `start: ready in ${Math.round(agent.readyMs)} ms, ${agent.readyCpuMs} ms of CPU to get there`,
  );

  await sleep(3000);
  const idleCpu = processCpuMs(pid);
  const idleRss = processRssMb(pid);
  await sleep(IDLE_S * 1000);
  console.log(
    `idle: RSS ${idleRss.toFixed(0)} MB, then ${processRssMb(pid).toFixed(0)} MB; ${processCpuMs(pid) - idleCpu} ms of CPU in ${IDLE_S} s`,
  );

  const agents = createClient(AgentService, createGrpcTransport({ baseUrl: stack.dispatcher.url }));
  const latencies: number[] = [];
  let peak = processRssMb(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, processRssMb(pid));
  }, 250);
  const cpu = processCpuMs(pid);
  const started = Date.now();
  const until = started + BUSY_S * 1000;
  await Promise.all(
    Array.from({ length: WINDOWS }, async (_, w) => {
      for (let n = 0; Date.now() < until; n++) {
        const t0 = performance.now();
        await agents.chat({ message: `BUSY ${n}`, chatId: `bench-${w}` }, stack.as(token));
        latencies.push(performance.now() - t0);
      }
    }),
  );
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const used = processCpuMs(pid) - cpu;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(0);
  console.log(
    `busy: ${WINDOWS} windows, ${latencies.length} messages in ${seconds.toFixed(0)} s (${(latencies.length / seconds).toFixed(0)}/s); p50 ${at(0.5)} ms, p99 ${at(0.99)} ms; ${(used / latencies.length).toFixed(2)} ms of CPU a message (${((used / (seconds * 1000)) * 100).toFixed(0)}% of a core); RSS peak ${peak.toFixed(0)} MB`,
  );
  await sleep(15_000);
  const metrics = await (await fetch(`${agent.url}/metrics`)).text();
  const live = Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1] ?? 0) / 2 ** 20;
  console.log(
    `after 15 s idle: RSS ${processRssMb(pid).toFixed(0)} MB, heap in use ${live.toFixed(0)} MB`,
  );
} finally {
  await stack.stop();
  await model.close();
}
