import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import type { NatsPlacement } from "@toolmesh/launcher";
import { CallbackEventSchema, CallStatus, DispatcherService } from "@toolmesh/proto";
import { createBalancedTransport, neverSent, type ServedTools } from "@toolmesh/sdk";
import { chainServices, eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { AckPolicy } from "nats";
import { afterAll, beforeAll, expect } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import {
  type CallResult,
  type FaultWindow,
  figuresOf,
  formatFigures,
  percentile,
} from "./cluster-calls.js";
import { serveRecordingTool } from "./recording-tool.js";

export const AGENTS = ["cluster-a", "cluster-b", "cluster-c", "cluster-d"];
const TOOL = "cluster.write";
/** A client that waits longer than this for one call counts it as hung. */
export const CALL_DEADLINE_MS = 30_000;

/** A three-node cluster with two replicas of each service, and the test's tool served on it. */
export interface ClusterRun {
  stack: TestStack;
  served: ServedTools;
  /** Call ids that reached the backend. */
  ran: Set<string>;
  results: CallResult[];
  windows: FaultWindow[];
}

/** Starts the stack and waits until both Dispatchers run the tool. */
export async function startClusterRun(
  natsPlacements?: (NatsPlacement | undefined)[],
): Promise<ClusterRun> {
  const stack = await startStack({
    cluster: 3,
    ...(natsPlacements ? { natsPlacements } : {}),
    services: [...chainServices, "callback", "memory-writer"],
    serviceEnv: {
      dispatcher: { TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000", TOOLMESH_SWEEP_INTERVAL_MS: "500" },
      // Audit's sweeper closes the calls of a Dispatcher that vanished.
      audit: { TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000", TOOLMESH_SWEEP_INTERVAL_MS: "500" },
    },
  });
  // A subscriber replaying the feed, so it keeps every broadcast for the count at the end.
  // Of the stream's replicas: an interest-retained stream takes no other on a cluster.
  const jsm = await stack.nc.jetstreamManager();
  await jsm.consumers.add("TOOLMESH_CALLBACK", {
    durable_name: "cluster-feed",
    ack_policy: AckPolicy.Explicit,
    num_replicas: (await jsm.streams.info("TOOLMESH_CALLBACK")).config.num_replicas,
  });
  const ran = new Set<string>();
  for (const agent of AGENTS) await stack.grantAll(agent);
  const served = await serveRecordingTool(stack, TOOL, ran);
  const as = stack.as(await stack.agentToken(AGENTS[0] as string));
  for (const name of ["dispatcher", "dispatcher-2"]) {
    const one = createClient(
      DispatcherService,
      createBalancedTransport({ baseUrls: [stack.service(name).url] }),
    );
    await eventually(
      async () => {
        const res = await one.dispatch({ tool: TOOL, arguments: { n: -1 } }, as);
        expect(res.status).toBe(CallStatus.SUCCESS);
      },
      30_000,
      `${name} to run the tool`,
    );
  }
  return { stack, served, ran, results: [], windows: [] };
}

/**
 * Starts a cluster run before the tests of the describe block that calls this and stops it after
 * them, even when they fail; the function returned hands the run to a test.
 */
export function clusterRunPerBlock(): () => ClusterRun {
  let run: ClusterRun | undefined;
  beforeAll(async () => {
    run = await startClusterRun();
  }, 240_000);
  afterAll(async () => {
    await run?.served.close();
    await run?.stack.stop();
  });
  return () => {
    if (!run) throw new Error("the cluster run did not start");
    return run;
  };
}

/** What strikes faults while the calls run. */
export interface FaultPlan {
  /** Resolves once this many more calls have finished: the stack worked between faults. */
  callsFinish(count: number): Promise<void>;
  /** Strikes a fault and keeps its window, from its first blow to the cluster healthy again. */
  fault(name: string, strike: () => Promise<void>): Promise<void>;
}

/**
 * Runs `calls` calls from the agents at `concurrency` through a client balancing over both
 * Dispatchers while `faults` strikes; calls go on until every fault struck and recovered, so none
 * strikes an idle stack. A window before the faults and one after are kept too.
 */
export async function runCalls(
  run: ClusterRun,
  settings: { calls: number; concurrency: number; gap: number },
  faults: (plan: FaultPlan) => Promise<void>,
): Promise<void> {
  const { stack, results, windows } = run;
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
    while (next < settings.calls || !faultsDone) {
      const n = next++;
      const callId = randomUUID();
      const startedAt = Date.now();
      try {
        const res = await dispatchers.dispatch(
          { tool: TOOL, arguments: { n }, context: { callId } },
          { ...as, timeoutMs: CALL_DEADLINE_MS },
        );
        expect(res.status).toBe(CallStatus.SUCCESS);
        results.push({ callId, agent, startedAt, ms: Date.now() - startedAt, kind: "acked" });
      } catch (error) {
        const e = ConnectError.from(error);
        results.push({
          callId,
          agent,
          startedAt,
          ms: Date.now() - startedAt,
          kind: "failed",
          code: e.code,
          neverSent: neverSent(error),
          // What the Dispatcher promised: the tool did not run, or it ran and its output is
          // withheld. verifyRecords checks the promise against what reached the backend.
          saidNotRun: e.rawMessage.includes("did not run"),
          message: e.rawMessage.slice(0, 120),
        });
        // As a client backs off after a refusal, instead of spinning through failures.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  const callsFinish = async (count: number) => {
    const target = results.length + count;
    await eventually(async () => expect(results.length).toBeGreaterThanOrEqual(target), 120_000);
  };
  const plan: FaultPlan = {
    callsFinish,
    async fault(name, strike) {
      await callsFinish(settings.gap);
      const from = Date.now();
      await strike();
      await cluster.ready();
      windows.push({ name, from, to: Date.now() });
    },
  };
  const struck = (async () => {
    const baselineFrom = Date.now();
    await callsFinish(settings.gap);
    windows.push({ name: "no fault (baseline)", from: baselineFrom, to: Date.now() });
    await faults(plan);
    const tailFrom = Date.now();
    await callsFinish(settings.gap);
    windows.push({ name: "after the faults", from: tailFrom, to: Date.now() });
  })().finally(() => {
    faultsDone = true;
  });
  await Promise.all([struck, ...Array.from({ length: settings.concurrency }, (_, w) => worker(w))]);
}

/**
 * Prints the figures of each window and checks, after recovery, that every acked call (and every
 * call that reached the backend) has exactly one callback event, audit record and memory entry,
 * that the chain verifies, that no refused call ran, and that no call hung.
 */
export async function verifyRecords(run: ClusterRun, label: string): Promise<void> {
  const { stack, results, ran, windows } = run;
  const acked = results.filter((r) => r.kind === "acked");
  const failed = results.filter((r) => r.kind === "failed");
  const figures = [
    ...windows.map((w) => figuresOf(results, w)),
    figuresOf(results, { name: "whole run", from: 0, to: Number.POSITIVE_INFINITY }),
  ];
  const reasons = new Map<string, number>();
  for (const r of failed) {
    const key = `${Code[r.code ?? Code.Unknown]}: ${r.message ?? ""}`;
    reasons.set(key, (reasons.get(key) ?? 0) + 1);
  }
  console.info(
    `${label}: ${results.length} calls, ${acked.length} acked, ${failed.length} failed, ${ran.size} reached the backend\n${formatFigures(figures)}\nfailures by answer:\n${[...reasons].map(([k, n]) => `${n} × ${k}`).join("\n")}`,
  );
  // Fail closed, never hang: every call was answered well before its deadline.
  expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(CALL_DEADLINE_MS);

  const wanted = new Set([...acked.map((r) => r.callId), ...ran]);
  const everyOne = async <T>(what: string, count: () => Promise<Map<string, T>>) =>
    eventually(
      async () => {
        const counts = await count();
        const missing = [...wanted].filter((id) => !counts.has(id));
        if (missing.length > 0) throw new Error(`${missing.length} calls have no ${what}`);
        return counts;
      },
      120_000,
      `a ${what} for every acked call`,
    );
  const broadcast = await everyOne("callback event", () => callbackCounts(stack));
  for (const id of wanted) expect(broadcast.get(id), `callback events of ${id}`).toBe(1);

  const auditor = stack.as(await stack.agentToken("cluster-auditor", { roles: ["auditor"] }));
  // First the chain: a fork (two writers chaining on different heads) also leaves records out of
  // the index, whose rows a chain sequence stored twice replaces.
  expect(await stack.auditClient().verifyChain({}, auditor)).toMatchObject({ ok: true });
  const audited = await everyOne("audit record", () => auditStatuses(stack, auditor));
  // No call ends twice in the log (its start may be a record of its own, UNSPECIFIED).
  for (const [id, records] of audited)
    expect(
      records.filter((s) => s !== CallStatus.UNSPECIFIED).length,
      `end records of ${id} (${records.map((s) => CallStatus[s]).join(", ")})`,
    ).toBeLessThanOrEqual(1);

  // The calls refused during the faults were refused before their tool ran.
  const refused = failed.filter(
    (r) => r.neverSent || r.saidNotRun || audited.get(r.callId)?.[0] === CallStatus.REFUSED,
  );
  for (const r of refused) expect(ran.has(r.callId), `refused call ${r.callId} ran`).toBe(false);

  const memory = await everyOne("memory entry", () => memoryCounts(stack));
  for (const id of wanted) expect(memory.get(id), `memory entries of ${id}`).toBe(1);

  const one = (counts: Map<string, unknown[] | number>) =>
    acked.filter((r) => {
      const found = counts.get(r.callId);
      return (Array.isArray(found) ? found.length : found) === 1;
    }).length;
  console.info(
    `${label}: after recovery ${acked.length} acked calls → ${one(audited)} with one audit record, ${one(broadcast)} with one callback event, ${one(memory)} with one memory entry; ${refused.length} refused before their tool ran (${failed.filter((r) => r.neverSent).length} never reached a Dispatcher), ${failed.length - refused.length} lost mid-call or ran with their output withheld (${failed.filter((r) => ran.has(r.callId)).length} of the failed calls ran; each has its records); p99 of acked calls ${Math.round(
      percentile(
        acked.map((r) => r.ms),
        99,
      ),
    )} ms`,
  );
}

/**
 * How many callback events each call id has in the stream, each message read by its sequence
 * (an interest-retained stream takes no ordered consumer on a cluster; cluster-feed keeps them).
 */
async function callbackCounts(stack: TestStack): Promise<Map<string, number>> {
  const jsm = await stack.nc.jetstreamManager();
  const { state } = await jsm.streams.info("TOOLMESH_CALLBACK");
  const counts = new Map<string, number>();
  if (state.messages === 0) return counts;
  let next = state.first_seq;
  const reader = async () => {
    for (let seq = next++; seq <= state.last_seq; seq = next++) {
      const msg = await jsm.streams.getMessage("TOOLMESH_CALLBACK", { seq }).catch(() => undefined);
      if (!msg) continue;
      const { callId } = fromBinary(CallbackEventSchema, msg.data);
      counts.set(callId, (counts.get(callId) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 16 }, reader));
  return counts;
}

/** The statuses of the audit records of each call id of the test's tool. */
async function auditStatuses(
  stack: TestStack,
  auditor: { headers: { authorization: string } },
): Promise<Map<string, CallStatus[]>> {
  const found = new Map<string, CallStatus[]>();
  for (const agentId of AGENTS) {
    let pageToken = "";
    do {
      const page = await stack
        .auditClient()
        .queryRecords({ agentId, tool: TOOL, pageSize: 1000, pageToken }, auditor);
      for (const r of page.records) found.set(r.callId, [...(found.get(r.callId) ?? []), r.status]);
      pageToken = page.nextPageToken;
    } while (pageToken);
  }
  return found;
}

/** How many result entries each call id has in the agents' memory files. */
async function memoryCounts(stack: TestStack): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const agent of AGENTS) {
    for (const line of (await readAgentMemory(stack.dataDir, agent)).split("\n")) {
      const match = /^\{"id":"([^"]+)\/result"/.exec(line);
      if (match?.[1]) counts.set(match[1], (counts.get(match[1]) ?? 0) + 1);
    }
  }
  return counts;
}
