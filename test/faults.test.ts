import { randomUUID } from "node:crypto";
import { streamNames } from "@toolmesh/nats";
import { AuditAction, CallStatus } from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import type { ServedTools } from "@toolmesh/sdk";
import {
  chainServices,
  eventually,
  feedBroadcasts,
  keepFeed,
  recordsByCall,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import { serveRecordingTool } from "./recording-tool.js";

const CALLS = Number(process.env.FAULTS_CALLS ?? 2000);
const AGENTS = ["fault-a", "fault-b", "fault-c", "fault-d"];
const TOOL = "faults.write";
/** The processes killed with SIGKILL in turn while the calls run, then started again. */
const VICTIMS = [
  "audit",
  "callback",
  "memory-writer",
  "registry",
  "permission",
  "dispatcher",
  "nats-server",
] as const;

// Every process of the stack, nats-server included, is killed with SIGKILL during a run of calls
// from several agents, and started again. After recovery, every call that reached its backend has
// its start record (no tool runs unrecorded); every call the Dispatcher answered has its end
// record with the status it was answered (no answer before its end record is stored), its
// broadcast once and its memory entry; a call whose Dispatcher was killed is closed by Audit's
// sweeper; and the chain verifies.
describe("kill -9 of every process during calls", () => {
  let stack: TestStack;
  let served: ServedTools;
  /** Call ids that reached the backend. */
  const ran = new Set<string>();
  /** Call ids the Dispatcher answered SUCCESS, with their agent. */
  const acked = new Map<string, string>();

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
      // Audit's sweeper closes the calls of the killed Dispatcher a second past their deadline.
      env: {
        TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000",
        TOOLMESH_SWEEP_INTERVAL_MS: "500",
        TOOLMESH_LEASE_GRACE_MS: "1000",
      },
    });
    for (const agent of AGENTS) await stack.grantAll(agent);
    await keepFeed(stack.nc);
    served = await serveRecordingTool(stack, TOOL, ran, { timeoutMs: 10_000 });
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it(`${CALLS} calls while each process is killed and restarted: no acked call without its records`, async () => {
    const tokens = await Promise.all(AGENTS.map((a) => stack.agentToken(a)));
    let refused = 0;
    let faultsDone = false;
    let next = 0;
    const worker = async (w: number) => {
      const agent = AGENTS[w % AGENTS.length] as string;
      const as = stack.as(tokens[w % AGENTS.length] as string);
      // Calls go on until every fault happened, so none of them strikes an idle stack.
      while ((next < CALLS || !faultsDone) && next < CALLS * 10) {
        const n = next++;
        const callId = randomUUID();
        try {
          const res = await stack
            .dispatcherClient()
            .dispatch({ tool: TOOL, arguments: { n }, context: { callId } }, as);
          expect(res.status).toBe(CallStatus.SUCCESS);
          acked.set(callId, agent);
        } catch {
          refused++;
          // A process is down; the next call tries again shortly.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    const faults = (async () => {
      for (const [i, victim] of VICTIMS.entries()) {
        const at = Math.floor(((i + 1) * CALLS) / (VICTIMS.length + 2));
        await eventually(async () => expect(next).toBeGreaterThanOrEqual(at), 120_000);
        if (victim === "nats-server") {
          await stack.nats.kill();
          await stack.nats.start();
        } else {
          await stack.service(victim).kill();
          await stack.service(victim).start();
        }
      }
      faultsDone = true;
    })();
    await Promise.all([faults, ...Array.from({ length: 16 }, (_, w) => worker(w))]);
    console.info(
      `faults: ${acked.size} calls acked, ${refused} refused or failed while a process was down, ${ran.size} reached the backend`,
    );
    expect(acked.size).toBeGreaterThan(CALLS / 2);
    // A fault that struck while calls ran refuses or interrupts some of them.
    expect(next - acked.size).toBeGreaterThan(0);

    // Every call that reached the backend has its start record and, once the sweeper closed the
    // calls of the killed Dispatcher, its end record; an acked call's end says SUCCESS.
    const auditor = stack.as(await stack.agentToken("faults-auditor", { roles: ["auditor"] }));
    const wanted = new Set([...acked.keys(), ...ran]);
    let audited = new Map<string, { start: boolean; ends: CallStatus[] }>();
    await eventually(
      async () => {
        const byCall = await recordsByCall(
          stack.auditClient(),
          auditor,
          AGENTS.map((agentId) => ({ agentId, tool: TOOL })),
        );
        audited = new Map(
          [...byCall].map(([id, records]) => [
            id,
            {
              start: records.some(startsCall),
              ends: records.filter(endsCall).map((r) => r.status),
            },
          ]),
        );
        const missing = [...wanted].filter(
          (id) => !audited.get(id)?.start || audited.get(id)?.ends.length !== 1,
        );
        if (missing.length > 0)
          throw new Error(`${missing.length} calls lack a record: ${await explain(missing)}`);
      },
      90_000,
      "the start and end records of every call that ran",
    );
    for (const id of ran) expect(audited.get(id)?.start, `start record of ${id}`).toBe(true);
    for (const id of acked.keys())
      expect(audited.get(id)?.ends, `end record of ${id}`).toEqual([CallStatus.SUCCESS]);
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);

    // Every call that ended has its broadcast on the feed, once.
    const broadcast = new Map<string, number>();
    await eventually(
      async () => {
        broadcast.clear();
        for (const { event } of await feedBroadcasts(stack.nc))
          broadcast.set(event.callId, (broadcast.get(event.callId) ?? 0) + 1);
        const missing = [...wanted].filter((id) => !broadcast.has(id));
        if (missing.length > 0)
          throw new Error(`${missing.length} calls have no broadcast: ${await explain(missing)}`);
      },
      60_000,
      "a broadcast of every call that ended",
    );
    const repeated = [...broadcast].filter(([, count]) => count !== 1);
    expect(repeated, "calls broadcast more than once").toEqual([]);

    // Every call that ended has its memory entry.
    await eventually(
      async () => {
        const text = (await Promise.all(AGENTS.map((a) => readAgentMemory(stack.dataDir, a)))).join(
          "",
        );
        for (const id of wanted)
          expect(text.includes(`"${id}/result"`), `memory of ${id}`).toBe(true);
      },
      60_000,
      "a memory entry for every call that ended",
    );
    const interrupted = [...wanted].filter(
      (id) => audited.get(id)?.ends[0] === CallStatus.INTERRUPTED,
    ).length;
    console.info(
      `faults: after recovery ${wanted.size} calls that ran or were acked → ${[...wanted].filter((id) => audited.get(id)?.start).length} start records, ${[...wanted].filter((id) => audited.get(id)?.ends.length === 1).length} end records (${interrupted} INTERRUPTED by the sweeper), ${[...wanted].filter((id) => broadcast.get(id) === 1).length} broadcasts, all with memory entries`,
    );
  }, 600_000);

  /** What the stack holds of calls that lack a record, so a failure says where they stopped. */
  async function explain(ids: string[]): Promise<string> {
    const jsm = await stack.nc.jetstreamManager();
    const auditor = stack.as(await stack.agentToken("faults-auditor", { roles: ["auditor"] }));
    const lines = await Promise.all(
      ids.slice(0, 5).map(async (id) => {
        const { records } = await stack
          .auditClient()
          .getCall({ callId: id }, auditor)
          .catch(() => ({ records: [] }));
        const facts = {
          acked: acked.has(id),
          ran: ran.has(id),
          records: records.map((r) => `${AuditAction[r.action]}:${CallStatus[r.status]}`),
        };
        return `${id} ${JSON.stringify(facts)}`;
      }),
    );
    const waiting = (await jsm.streams.info(streamNames.records)).state.messages;
    const follower = await jsm.consumers.info(streamNames.auditLog, "callback");
    const backlog = `${waiting} record batches not chained; callback consumer: ${follower.num_pending} pending, ${follower.num_ack_pending} unacked, ${follower.num_redelivered} redelivered`;
    return `${lines.join("; ")}; ${backlog}`;
  }
});
