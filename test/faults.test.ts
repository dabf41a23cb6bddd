import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { readWindow, subjects } from "@toolmesh/nats";
import { CallStatus, OutcomeSchema } from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import { chainServices, eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { consumerOpts, type JsMsg } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";
import { serveRecordingTool } from "./recording-tool.js";

const CALLS = Number(process.env.FAULTS_CALLS ?? 2000);
const AGENTS = ["fault-a", "fault-b", "fault-c", "fault-d"];
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
// from several agents, and started again. After recovery, every call the Dispatcher acked has its
// audit record, its callback event and its memory entry, and every call that reached its backend
// has an outcome.
describe("kill -9 of every process during calls", () => {
  let stack: TestStack;
  let served: ServedTools;
  /** Call ids that reached the backend. */
  const ran = new Set<string>();
  /** Call ids the Dispatcher acked, with their agent. */
  const acked = new Map<string, string>();

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
      serviceEnv: {
        dispatcher: {
          TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000",
          TOOLMESH_SWEEP_INTERVAL_MS: "500",
        },
      },
    });
    for (const agent of AGENTS) await stack.grantAll(agent);
    served = await serveRecordingTool(stack, "faults.write", ran);
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
            .dispatch({ tool: "faults.write", arguments: { n }, context: { callId } }, as);
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

    // Every acked call, and every call that reached the backend, ends with a callback event.
    const js = stack.nc.jetstream();
    const broadcast = new Map<string, number>();
    const wanted = new Set([...acked.keys(), ...ran]);
    await eventually(
      async () => {
        const opts = consumerOpts().orderedConsumer().deliverAll();
        const sub = await js.subscribe("toolmesh.callback.>", opts);
        broadcast.clear();
        const info = await (await stack.nc.jetstreamManager()).streams.info("TOOLMESH_CALLBACK");
        let seen = 0;
        for await (const m of sub as AsyncIterable<JsMsg>) {
          const id = m.headers?.get("Nats-Msg-Id") ?? "";
          broadcast.set(id, (broadcast.get(id) ?? 0) + 1);
          if (++seen >= info.state.messages) break;
        }
        sub.unsubscribe();
        const missing = [...wanted].filter((id) => !broadcast.has(id));
        if (missing.length > 0)
          throw new Error(
            `${missing.length} calls have no callback event: ${await explain(missing)}`,
          );
      },
      60_000,
      "a callback event for every acked call",
    );
    expect([...broadcast.values()].every((count) => count === 1)).toBe(true);

    // Every acked call has its audit record, and the chain verifies.
    const auditor = stack.as(await stack.agentToken("faults-auditor", { roles: ["auditor"] }));
    const audited = new Set<string>();
    await eventually(
      async () => {
        for (const agentId of AGENTS) {
          let pageToken = "";
          do {
            const page = await stack
              .auditClient()
              .queryRecords({ agentId, tool: "faults.write", pageSize: 1000, pageToken }, auditor);
            for (const r of page.records) audited.add(r.callId);
            pageToken = page.nextPageToken;
          } while (pageToken);
        }
        for (const id of wanted) expect(audited.has(id), `audit record of ${id}`).toBe(true);
      },
      60_000,
      "an audit record for every acked call",
    );
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);

    // Every acked call has its memory entry.
    await eventually(
      async () => {
        const text = (await Promise.all(AGENTS.map((a) => readAgentMemory(stack.dataDir, a)))).join(
          "",
        );
        for (const id of wanted)
          expect(text.includes(`"${id}/result"`), `memory of ${id}`).toBe(true);
      },
      60_000,
      "a memory entry for every acked call",
    );
    console.info(
      `faults: after recovery ${acked.size} acked calls → ${[...acked.keys()].filter((id) => audited.has(id)).length} audit records, ${[...acked.keys()].filter((id) => broadcast.has(id)).length} callback events, all with memory entries`,
    );
  }, 600_000);

  /** What the bus holds of calls that lack a record, so a failure says where the chain stopped. */
  async function explain(ids: string[]): Promise<string> {
    const jsm = await stack.nc.jetstreamManager();
    // Outcomes are filed under a shard of their call id: the call's is among the shard's.
    const hasOutcome = async (callId: string) => {
      let found = false;
      await readWindow({
        nc: stack.nc,
        stream: "TOOLMESH_OUTCOME",
        subject: subjects.outcome("dispatcher", callId),
        fromMs: 0,
        visit: (msg) => {
          found = fromBinary(OutcomeSchema, msg.data).callId === callId;
          return found;
        },
      });
      return found;
    };
    const lines = await Promise.all(
      ids.slice(0, 5).map(async (id) => {
        const facts = {
          acked: acked.has(id),
          ran: ran.has(id),
          outcome: await hasOutcome(id),
          lease: (await jsm.streams.info("TOOLMESH_INFLIGHT")).state.messages,
        };
        return `${id} ${JSON.stringify(facts)}`;
      }),
    );
    const consumer = await jsm.consumers.info("TOOLMESH_OUTCOME", "callback");
    const backlog = `callback consumer: ${consumer.num_pending} pending, ${consumer.num_ack_pending} unacked, ${consumer.num_redelivered} redelivered`;
    return `${lines.join("; ")}; ${backlog}`;
  }
});
