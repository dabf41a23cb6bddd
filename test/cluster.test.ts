import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { CallStatus, DispatcherService } from "@toolmesh/proto";
import { createBalancedTransport, neverSent, type ServedTools } from "@toolmesh/sdk";
import { chainServices, eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { consumerOpts, type JsMsg } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import {
  type CallResult,
  type FaultWindow,
  figuresOf,
  formatFigures,
  percentile,
} from "./cluster-calls.js";
import { serveRecordingTool } from "./recording-tool.js";

const CALLS = Number(process.env.CLUSTER_CALLS ?? 5000);
const CONCURRENCY = 32;
const AGENTS = ["cluster-a", "cluster-b", "cluster-c", "cluster-d"];
/** The services whose replicas are killed in turn; a lease holder is the one killed. */
const SERVICES = ["dispatcher", "registry", "permission", "audit", "callback", "memory-writer"];
/** A client that waits longer than this for one call counts it as hung. */
const CALL_DEADLINE_MS = 30_000;

// A three-node JetStream cluster (every stream and bucket with 3 replicas, fsync always) and two
// replicas of every service, under calls from several agents at concurrency 32 through a client
// balancing over both Dispatchers, while nats-server nodes are killed, the meta leader is
// killed, each service loses a replica and a node is paused. After recovery every acked call has
// exactly one audit record, callback event and memory entry, and no refused call ran its tool.
describe("a three-node cluster under faults", () => {
  let stack: TestStack;
  let served: ServedTools;
  /** Call ids that reached the backend. */
  const ran = new Set<string>();
  const results: CallResult[] = [];
  const windows: FaultWindow[] = [];

  beforeAll(async () => {
    stack = await startStack({
      cluster: 3,
      services: [...chainServices, "audit", "callback", "memory-writer"],
      serviceEnv: {
        dispatcher: {
          TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000",
          TOOLMESH_SWEEP_INTERVAL_MS: "500",
        },
      },
    });
    for (const agent of AGENTS) await stack.grantAll(agent);
    served = await serveRecordingTool(stack, "cluster.write", ran);
    // The tool is in both Dispatchers' snapshots before the first call.
    for (const name of ["dispatcher", "dispatcher-2"]) {
      const client = createClient(
        DispatcherService,
        createBalancedTransport({ baseUrls: [stack.service(name).url] }),
      );
      const as = stack.as(await stack.agentToken(AGENTS[0] as string));
      await eventually(
        async () => {
          const res = await client.dispatch({ tool: "cluster.write", arguments: { n: -1 } }, as);
          expect(res.status).toBe(CallStatus.SUCCESS);
        },
        30_000,
        `${name} to run the tool`,
      );
    }
  }, 240_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it(`${CALLS} calls at concurrency ${CONCURRENCY} through node, leader, replica and pause faults`, async () => {
    const cluster = stack.cluster;
    if (!cluster) throw new Error("the stack runs no cluster");
    const dispatchers = createClient(
      DispatcherService,
      createBalancedTransport({
        baseUrls: [stack.service("dispatcher").url, stack.service("dispatcher-2").url],
      }),
    );
    const tokens = await Promise.all(AGENTS.map((a) => stack.agentToken(a)));
    let next = 0;
    let faultsDone = false;
    const worker = async (w: number) => {
      const agent = AGENTS[w % AGENTS.length] as string;
      const as = stack.as(tokens[w % AGENTS.length] as string);
      // Calls go on until every fault struck and recovered, so none strikes an idle stack.
      while (next < CALLS || !faultsDone) {
        const n = next++;
        const callId = randomUUID();
        const startedAt = Date.now();
        try {
          const res = await dispatchers.dispatch(
            { tool: "cluster.write", arguments: { n }, context: { callId } },
            { ...as, timeoutMs: CALL_DEADLINE_MS },
          );
          expect(res.status).toBe(CallStatus.SUCCESS);
          results.push({ callId, agent, startedAt, ms: Date.now() - startedAt, kind: "acked" });
        } catch (error) {
          results.push({
            callId,
            agent,
            startedAt,
            ms: Date.now() - startedAt,
            kind: "failed",
            code: ConnectError.from(error).code,
            neverSent: neverSent(error),
            // What the Dispatcher promised: the tool did not run, or it ran and its output is
            // withheld. The test checks the promise against what reached the backend.
            saidNotRun: ConnectError.from(error).rawMessage.includes("did not run"),
            message: ConnectError.from(error).rawMessage.slice(0, 120),
          });
          // As a client backs off after a refusal, instead of spinning through failures.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    };
    /** Resolves once this many more calls have finished: the stack worked between faults. */
    const callsFinish = (count: number) => {
      const target = results.length + count;
      return eventually(async () => expect(results.length).toBeGreaterThanOrEqual(target), 120_000);
    };
    const fault = async (name: string, strike: () => Promise<void>) => {
      await callsFinish(Math.floor(CALLS / 12));
      const from = Date.now();
      await strike();
      await cluster.ready();
      windows.push({ name, from, to: Date.now() });
    };

    const faults = (async () => {
      const baselineFrom = Date.now();
      await callsFinish(Math.floor(CALLS / 12));
      windows.push({ name: "no fault (baseline)", from: baselineFrom, to: Date.now() });

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
        // The other two elect a new meta leader.
        await eventually(
          async () => expect((await cluster.metaLeader()).name).not.toBe(leader.name),
          30_000,
          "a new meta leader",
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
      await fault("a NATS node paused (SIGSTOP) for 10 s", async () => {
        const leader = await cluster.metaLeader();
        leader.pause();
        try {
          // The fault is a pause of this length; there is no event to wait for.
          await new Promise((resolve) => setTimeout(resolve, 10_000));
        } finally {
          leader.resume();
        }
      });
      const tailFrom = Date.now();
      await callsFinish(Math.floor(CALLS / 25));
      windows.push({ name: "after the faults", from: tailFrom, to: Date.now() });
      faultsDone = true;
    })();
    await Promise.all([
      faults.finally(() => {
        faultsDone = true;
      }),
      ...Array.from({ length: CONCURRENCY }, (_, w) => worker(w)),
    ]);

    const acked = results.filter((r) => r.kind === "acked");
    const failed = results.filter((r) => r.kind === "failed");
    const figures = [
      ...windows.map((w) => figuresOf(results, w)),
      figuresOf(results, { name: "whole run", from: 0, to: Number.POSITIVE_INFINITY }),
    ];
    console.info(
      `cluster: ${results.length} calls, ${acked.length} acked, ${failed.length} failed, ${ran.size} reached the backend\n${formatFigures(figures)}`,
    );
    const reasons = new Map<string, number>();
    for (const r of failed) {
      const key = `${Code[r.code ?? Code.Unknown]}: ${r.message ?? ""}`;
      reasons.set(key, (reasons.get(key) ?? 0) + 1);
    }
    console.info(
      `cluster: failures by answer:\n${[...reasons].map(([k, n]) => `${n} × ${k}`).join("\n")}`,
    );
    expect(results.length).toBeGreaterThanOrEqual(CALLS);
    // Fail closed, never hang: every call was answered well before its deadline.
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(CALL_DEADLINE_MS);

    // Every acked call and every call that reached the backend ends with one callback event.
    const wanted = new Set([...acked.map((r) => r.callId), ...ran]);
    const broadcast = await eventually(
      async () => {
        const counts = await callbackCounts();
        const missing = [...wanted].filter((id) => !counts.has(id));
        if (missing.length > 0) throw new Error(`${missing.length} calls have no callback event`);
        return counts;
      },
      120_000,
      "a callback event for every acked call",
    );
    for (const id of wanted) expect(broadcast.get(id), `callback events of ${id}`).toBe(1);

    // Every acked call has exactly one audit record; no call id appears twice in the log.
    const auditor = stack.as(await stack.agentToken("cluster-auditor", { roles: ["auditor"] }));
    const audited = await eventually(
      async () => {
        const counts = await auditCounts(auditor);
        const missing = [...wanted].filter((id) => !counts.has(id));
        if (missing.length > 0) throw new Error(`${missing.length} calls have no audit record`);
        return counts;
      },
      120_000,
      "an audit record for every acked call",
    );
    for (const [id, records] of audited) expect(records.length, `audit records of ${id}`).toBe(1);
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);

    // The calls refused during the faults were refused before their tool ran.
    const refused = failed.filter(
      (r) => r.neverSent || r.saidNotRun || audited.get(r.callId)?.[0] === CallStatus.REFUSED,
    );
    for (const r of refused) expect(ran.has(r.callId), `refused call ${r.callId} ran`).toBe(false);

    // Every acked call has exactly one memory entry.
    const memory = await eventually(
      async () => {
        const counts = await memoryCounts();
        const missing = [...wanted].filter((id) => !counts.has(id));
        if (missing.length > 0) throw new Error(`${missing.length} calls have no memory entry`);
        return counts;
      },
      120_000,
      "a memory entry for every acked call",
    );
    for (const id of wanted) expect(memory.get(id), `memory entries of ${id}`).toBe(1);

    const lost = failed.length - refused.length;
    console.info(
      `cluster: after recovery ${acked.length} acked calls → ${acked.filter((r) => audited.get(r.callId)?.length === 1).length} with one audit record, ${acked.filter((r) => broadcast.get(r.callId) === 1).length} with one callback event, ${acked.filter((r) => memory.get(r.callId) === 1).length} with one memory entry; ${refused.length} refused before their tool ran (${failed.filter((r) => r.neverSent).length} never reached a Dispatcher), ${lost} lost mid-call or ran with their output withheld (${failed.filter((r) => ran.has(r.callId)).length} of the failed calls ran; each has its records); p99 of acked calls ${Math.round(
        percentile(
          acked.map((r) => r.ms),
          99,
        ),
      )} ms`,
    );
  }, 900_000);

  /** The replica of a service to kill: the lease holder for Audit and memory-writer. */
  async function replicaToKill(service: string): Promise<string> {
    if (service !== "audit" && service !== "memory-writer") return service;
    const holder = await stack.nc
      .jetstream()
      .views.kv("toolmesh-leases")
      .then((kv) => kv.get(service));
    // Each process names itself in its log line when it takes the lease.
    const instance = holder?.string() ?? "";
    for (const name of [service, `${service}-2`]) {
      const text = await stack.logText(name);
      if (instance && text.includes(instance)) return name;
    }
    return service;
  }

  /** How many callback events each call id has in the stream. */
  async function callbackCounts(): Promise<Map<string, number>> {
    const js = stack.nc.jetstream();
    const info = await (await stack.nc.jetstreamManager()).streams.info("TOOLMESH_CALLBACK");
    const counts = new Map<string, number>();
    if (info.state.messages === 0) return counts;
    const sub = await js.subscribe("toolmesh.callback.>", consumerOpts().orderedConsumer());
    let seen = 0;
    for await (const m of sub as AsyncIterable<JsMsg>) {
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      counts.set(id, (counts.get(id) ?? 0) + 1);
      if (++seen >= info.state.messages) break;
    }
    sub.unsubscribe();
    return counts;
  }

  /** The statuses of the audit records of each call id of the test's tool. */
  async function auditCounts(auditor: {
    headers: { authorization: string };
  }): Promise<Map<string, CallStatus[]>> {
    const counts = new Map<string, CallStatus[]>();
    for (const agentId of AGENTS) {
      let pageToken = "";
      do {
        const page = await stack
          .auditClient()
          .queryRecords({ agentId, tool: "cluster.write", pageSize: 1000, pageToken }, auditor);
        for (const r of page.records)
          counts.set(r.callId, [...(counts.get(r.callId) ?? []), r.status]);
        pageToken = page.nextPageToken;
      } while (pageToken);
    }
    return counts;
  }

  /** How many result entries each call id has in the agents' memory files. */
  async function memoryCounts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const agent of AGENTS) {
      for (const line of (await readAgentMemory(stack.dataDir, agent)).split("\n")) {
        const match = /^\{"id":"([^"]+)\/result"/.exec(line);
        if (match?.[1]) counts.set(match[1], (counts.get(match[1]) ?? 0) + 1);
      }
    }
    return counts;
  }
});
