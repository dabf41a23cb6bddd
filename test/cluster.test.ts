import { eventually } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { clusterRunPerBlock, runCalls, verifyRecords } from "./cluster-run.js";

const CALLS = Number(process.env.CLUSTER_CALLS ?? 5000);
const CONCURRENCY = 32;
/** The services whose replicas are killed in turn; a lease holder is the one killed. */
const SERVICES = ["dispatcher", "registry", "permission", "audit", "callback", "memory-writer"];

// A three-node JetStream cluster (every stream and bucket with 3 replicas, fsync always) and two
// replicas of every service, under calls from several agents at concurrency 32 through a client
// balancing over both Dispatchers, while nats-server nodes are killed, the meta leader is
// killed, each service loses a replica and a node is paused. After recovery every acked call has
// exactly one audit record, callback event and memory entry, and no refused call ran its tool.
describe("a three-node cluster under faults", () => {
  const clusterRun = clusterRunPerBlock();

  it(`${CALLS} calls at concurrency ${CONCURRENCY} through node, leader, replica and pause faults`, async () => {
    const run = clusterRun();
    const { stack } = run;
    const cluster = stack.cluster;
    if (!cluster) throw new Error("the stack runs no cluster");
    await runCalls(
      run,
      { calls: CALLS, concurrency: CONCURRENCY, gap: Math.floor(CALLS / 12) },
      async ({ fault, callsFinish }) => {
        await fault("kill -9 of a NATS node, restarted", async () => {
          const leader = await cluster.metaLeader();
          const victim = cluster.nodes.find((n) => n !== leader) ?? leader;
          await victim.kill();
          await callsFinish(Math.floor(CALLS / 25));
          await victim.start();
        });
        await fault("kill -9 of the JetStream meta leader, restarted", async () => {
          const leader = await cluster.metaLeader();
          await leader.kill();
          await eventually(
            async () => expect((await cluster.metaLeader()).name).not.toBe(leader.name),
            30_000,
            "the other two to elect a meta leader",
          );
          await callsFinish(Math.floor(CALLS / 25));
          await leader.start();
        });
        for (const service of SERVICES) {
          await fault(`kill -9 of one ${service} replica, restarted`, async () => {
            const victim = stack.service(await replicaToKill(service));
            await victim.kill();
            await callsFinish(Math.floor(CALLS / 50));
            await victim.start();
          });
        }
        await fault("a NATS node (the meta leader) paused (SIGSTOP) for 10 s", async () => {
          const leader = await cluster.metaLeader();
          leader.pause();
          try {
            // The fault is a pause of this length; there is no event to wait for.
            await new Promise((resolve) => setTimeout(resolve, 10_000));
          } finally {
            leader.resume();
          }
        });
      },
    );
    expect(run.results.length).toBeGreaterThanOrEqual(CALLS);
    await verifyRecords(run, "cluster");
  }, 900_000);

  /** The replica of a service to kill: the lease holder for Audit and memory-writer. */
  async function replicaToKill(service: string): Promise<string> {
    if (service !== "audit" && service !== "memory-writer") return service;
    const { stack } = clusterRun();
    const kv = await stack.nc.jetstream().views.kv("toolmesh-leases");
    // Each process names its instance in the log line where it takes the lease.
    const instance = (await kv.get(service))?.string() ?? "";
    for (const name of [service, `${service}-2`]) {
      if (instance && (await stack.logText(name)).includes(instance)) return name;
    }
    return service;
  }
});
