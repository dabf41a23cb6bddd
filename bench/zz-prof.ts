// Temporary: profile the chain (not committed).
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Effect, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { repoRoot, startStack } from "@toolmesh/testkit";
import { noopDispatch, spawnScript } from "./chain-client.js";
import { closedLoop } from "./closed-loop.js";
import { cpuMs } from "./proc.js";

const port = process.env.PORT_KIND ?? "main";
const c = Number(process.env.C ?? 64);
const secs = Number(process.env.SECS ?? 10);
const stack = await startStack({
  serviceEnv: process.env.PROF
    ? {
        dispatcher: {
          NODE_OPTIONS: `--import=${path.join(repoRoot, "bench", "cpu-profile.mjs")}`,
          BENCH_PROFILE_DIR: "/tmp/prof",
        },
      }
    : {},
});
const noop = await spawnScript("bench/noop-tool.ts", {
  TOOLMESH_REGISTRY_URL: stack.registry.url,
  TOOLMESH_TOOL_TOKEN: stack.adminToken,
});
await stack.permissionClient.grant(
  {
    grant: {
      principal: { kind: PrincipalKind.AGENT, id: "bench-agent" },
      resource: { kind: ResourceKind.TOOL, pattern: "bench.noop" },
      scopes: ["bench:run"],
      effect: Effect.ALLOW,
      enabled: true,
    },
  },
  { headers: { authorization: `Bearer ${stack.adminToken}` } },
);
const md = new grpc.Metadata();
md.set("authorization", `Bearer ${await stack.agentToken("bench-agent")}`);
const call = noopDispatch(
  port === "main" ? stack.dispatcher.port : stack.dispatcherGrpcPort,
  () => md,
);
for (let i = 0; ; i++) {
  try {
    await call();
    break;
  } catch (e) {
    if (i > 200) throw e;
    await new Promise((r) => setTimeout(r, 50));
  }
}
await closedLoop("warm", call, 3000, c, false);
const pids: Record<string, number> = {
  dispatcher: stack.service("dispatcher").child.pid ?? 0,
  audit: stack.service("audit").child.pid ?? 0,
  nats: stack.nats.pid ?? 0,
  backend: noop.child.pid ?? 0,
  client: process.pid,
};
const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuMs(p)]));
const { latencies, elapsed, errors } = await closedLoop("run", call, secs * 1000, c, true);
const per = Object.entries(pids)
  .map(([k, p]) => `${k} ${((cpuMs(p) - (before[k] ?? 0)) / latencies.length).toFixed(3)}`)
  .join(", ");
latencies.sort((a, b) => a - b);
console.log(
  `${port} c${c}: ${(latencies.length / elapsed).toFixed(0)} rps, p50 ${latencies[Math.floor(latencies.length / 2)]?.toFixed(3)} ms, errors ${errors}; CPU ms/call: ${per}`,
);
noop.child.kill();
await stack.stop();
process.exit(0);
