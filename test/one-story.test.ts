import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { busAccess, streamNames } from "@toolmesh/nats";
import { AuditAction, type AuditRecord, AuditRecordSchema, CallStatus } from "@toolmesh/proto";
import { endsCall, recordSlices, startsCall } from "@toolmesh/records";
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
import { serveRecordingTool } from "./recording-tool.js";

const CALLS = Number(process.env.STORY_CALLS ?? 2000);
const CONCURRENCY = 16;
/** nats-server is killed (SIGKILL) and started again this many times while the calls run. */
const KILLS = Number(process.env.STORY_KILLS ?? 3);
/** How long a batch whose ack was lost is sent again before its calls are answered UNAVAILABLE. */
const RECORD_RETRY_MS = 8000;
/**
 * How long nats-server stays down the last time: longer than the Dispatcher sends a batch again,
 * so calls under way are answered UNAVAILABLE and the sweeper closes those whose start was stored.
 */
const LONG_OUTAGE_MS = RECORD_RETRY_MS + 4000;
const AGENT = "story-agent";
/** A read-only tool runs alongside its start record; one with side effects only once it is stored. */
const READ = "story.read";
const WRITE = "story.write";
/** Each call's timeout: a call left open is closed by the sweeper this long (and the grace) after it started. */
const TIMEOUT_MS = 10_000;

/** What the caller was answered: a status, or an error and what its message promised. */
type Answer =
  | { kind: "status"; status: CallStatus }
  | {
      kind: "error";
      code: Code;
      message: string;
      /** `did-not-run`: refused before its tool ran; `not-stored`: ran, its end record was not stored; `no-record`: ran (read-only), none of it is stored; `unknown`: ran, whether its end was stored is not known. */
      promise: "did-not-run" | "not-stored" | "no-record" | "unknown" | "other";
    };

function answerOf(error: unknown): Answer {
  const e = ConnectError.from(error);
  const promise = /did not run/.test(e.rawMessage)
    ? "did-not-run"
    : /was not stored/.test(e.rawMessage)
      ? "not-stored"
      : /none of it is stored/.test(e.rawMessage)
        ? "no-record"
        : /not known yet/.test(e.rawMessage)
          ? "unknown"
          : "other";
  return { kind: "error", code: e.code, message: e.rawMessage, promise };
}

// One story per call: nats-server is killed with SIGKILL, and started again, several times under
// 2,000 calls at concurrency 16 (the last time it stays down longer than the Dispatcher retries), half of them to a read-only tool (which runs alongside its start
// record, or before it when the start is written with its end as one record) and half to a tool with side effects. Once Audit's sweeper has closed every call left
// open, each call's final status is one fact: the caller's answer, the audit record (its end
// record, read back with QueryRecords), the outcome (Callback's GetOutcome) and its broadcast
// agree; a caller answered UNAVAILABLE finds what its answer promised (the tool did not run; the
// call closed INTERRUPTED; a read-only call none of which is stored; or one status everywhere); and no tool with side effects ran without
// its start record.
describe("one story per call while nats-server is killed", () => {
  let stack: TestStack;
  const served: ServedTools[] = [];
  /** Call ids that reached each tool's backend. */
  const ran = new Set<string>();

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
      env: {
        TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000",
        TOOLMESH_SWEEP_INTERVAL_MS: "500",
        TOOLMESH_LEASE_GRACE_MS: "2000",
      },
      // A batch whose ack was lost is sent again for less than a call's timeout and the grace, so
      // the sweeper never closes a call whose end record is still being written.
      serviceEnv: { dispatcher: { TOOLMESH_RECORD_RETRY_MS: String(RECORD_RETRY_MS) } },
    });
    await stack.grantAll(AGENT);
    await keepFeed(stack.nc);
    served.push(
      await serveRecordingTool(stack, READ, ran, { sideEffects: false, timeoutMs: TIMEOUT_MS }),
      await serveRecordingTool(stack, WRITE, ran, { sideEffects: true, timeoutMs: TIMEOUT_MS }),
    );
  }, 120_000);

  afterAll(async () => {
    for (const s of served) await s.close();
    await stack?.stop();
  });

  it(`${CALLS} calls at concurrency ${CONCURRENCY}, nats-server killed ${KILLS} times: answer, audit record and outcome agree`, async () => {
    const agent = stack.as(await stack.agentToken(AGENT));
    const auditor = stack.as(await stack.agentToken("story-auditor", { roles: ["auditor"] }));
    const dispatcher = stack.dispatcherClient();
    const calls = new Map<string, { tool: string; answer?: Answer }>();
    let next = 0;
    let killing = true;
    const worker = async () => {
      while (next < CALLS) {
        const n = next++;
        const callId = randomUUID();
        const tool = n % 2 === 0 ? READ : WRITE;
        const call: { tool: string; answer?: Answer } = { tool };
        calls.set(callId, call);
        try {
          const res = await dispatcher.dispatch(
            { tool, arguments: { n }, context: { callId } },
            agent,
          );
          call.answer = { kind: "status", status: res.status };
        } catch (error) {
          call.answer = answerOf(error);
          // nats-server is down: the next call comes shortly, not at once.
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const kills = (async () => {
      for (let k = 1; k <= KILLS; k++) {
        const at = Math.floor((k * CALLS) / (KILLS + 1));
        await eventually(async () => expect(next).toBeGreaterThanOrEqual(at), 300_000);
        await stack.nats.kill();
        // The outage itself: the last one outlasts the Dispatcher's retries.
        if (k === KILLS) await new Promise((resolve) => setTimeout(resolve, LONG_OUTAGE_MS));
        await stack.nats.start();
      }
      killing = false;
    })();
    await Promise.all([kills, ...Array.from({ length: CONCURRENCY }, worker)]);
    expect(killing).toBe(false);

    // Audit chains everything written (the record stream drains), the sweeper closes every call
    // whose start was stored and end was not, and every call answered with a status is indexed.
    // A call that never settles is not waited for beyond that: it shows below, as a disagreement.
    let byCall = new Map<string, AuditRecord[]>();
    const jsm = await stack.nc.jetstreamManager();
    const settled = await eventually(
      async () => {
        expect((await jsm.streams.info(streamNames.records)).state.messages).toBe(0);
        byCall = await recordsByCall(stack.auditClient(), auditor, [
          { agentId: AGENT, tool: READ },
          { agentId: AGENT, tool: WRITE },
        ]);
        const unsettled = [...calls].filter(([id, call]) => {
          const records = byCall.get(id) ?? [];
          const open = records.some(startsCall) && !records.some(endsCall);
          // An answer that promised the outcome would be recorded waits for it too.
          const promised = call.answer?.kind === "error" && call.answer.promise === "unknown";
          return (
            open ||
            (call.answer?.kind === "status" && records.length === 0) ||
            (promised && !records.some(endsCall))
          );
        });
        expect(unsettled.map(([id]) => id)).toEqual([]);
        return true;
      },
      120_000,
      "every call chained, and every call with a start record closed",
    ).catch((error: unknown) => {
      console.info(`one story: not settled: ${String(error).slice(0, 2000)}`);
      return false;
    });
    const outcomes = new Map<string, CallStatus | undefined>();
    const ids = [...calls.keys()];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, w) => {
        for (let i = w; i < ids.length; i += CONCURRENCY) {
          const callId = ids[i] as string;
          const status = await stack
            .callbackClient()
            .getOutcome({ callId }, agent)
            .then(
              ({ event }) => event?.status,
              (error: unknown) => {
                if (ConnectError.from(error).code === Code.NotFound) return undefined;
                throw error;
              },
            );
          outcomes.set(callId, status);
        }
      }),
    );
    // Callback broadcasts from the log on its own time: a group in flight when nats-server was
    // killed waits for its ack to time out before it is sent again, so the feed may trail the
    // outcomes by seconds. Waited for until every ended call has one, bounded; a broadcast that
    // never comes shows below as a disagreement.
    let broadcasts = new Map<string, CallStatus[]>();
    const feedWait = Date.now();
    await eventually(
      async () => {
        broadcasts = new Map();
        for (const { event } of await feedBroadcasts(stack.nc))
          broadcasts.set(event.callId, [...(broadcasts.get(event.callId) ?? []), event.status]);
        const missing = [...byCall].filter(
          ([id, records]) => records.some(endsCall) && !broadcasts.has(id),
        );
        expect(missing.length).toBe(0);
      },
      60_000,
      "a broadcast for every ended call",
      500,
    ).catch(async () => {
      // Where Callback stands on the log, for whoever reads the failure below.
      const info = await jsm.consumers
        .info(streamNames.auditLog, busAccess.callback.durables.auditLog)
        .catch(String);
      console.info(`one story: broadcasts missing; Callback's durable: ${JSON.stringify(info)}`);
    });
    console.info(
      `one story: the feed held every broadcast ${Date.now() - feedWait} ms after the outcomes`,
    );

    const disagreements: string[] = [];
    const tally = new Map<string, number>();
    const count = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);
    for (const [callId, call] of calls) {
      const records = byCall.get(callId) ?? [];
      const ends = records.filter(endsCall);
      const end = ends[0];
      const audited = end?.status;
      const outcome = outcomes.get(callId);
      const broadcast = broadcasts.get(callId) ?? [];
      const answer = call.answer;
      const wrong = (why: string) =>
        disagreements.push(
          `${callId} (${call.tool}): ${why}; answer ${answer?.kind === "status" ? CallStatus[answer.status] : `${answer ? Code[answer.code] : "none"} "${answer?.kind === "error" ? answer.message : ""}"`}, records ${records.map((r) => `${AuditAction[r.action]}:${CallStatus[r.status]}${r.reason ? `(${r.reason})` : ""}`).join(" ")}, outcome ${outcome === undefined ? "none" : CallStatus[outcome]}, broadcasts ${broadcast.map((s) => CallStatus[s]).join(" ")}, ran ${ran.has(callId)}`,
        );
      count(answer?.kind === "status" ? CallStatus[answer.status] : `error ${answer?.promise}`);
      count(
        `audit ${audited === undefined ? "none" : CallStatus[audited]}${end?.source === "audit" ? " (sweeper)" : ""}`,
      );
      if (ends.length > 1) wrong(`${ends.length} end records`);
      if (outcome !== audited) wrong("the outcome is not the audit record's status");
      const expectedBroadcast = audited === undefined ? [] : [audited];
      if (JSON.stringify(broadcast) !== JSON.stringify(expectedBroadcast))
        wrong("the broadcasts are not the audit record's status, once");
      if (call.tool === WRITE && ran.has(callId) && !records.some(startsCall))
        wrong("a tool with side effects ran without its start record");
      if (!answer) wrong("no answer");
      else if (answer.kind === "status") {
        if (audited !== answer.status) wrong("answered a status the audit record does not say");
      } else if (answer.promise === "did-not-run") {
        if (ran.has(callId)) wrong("answered that the tool did not run, but it ran");
        if (audited !== undefined && audited !== CallStatus.INTERRUPTED)
          wrong("answered that the tool did not run, but the call ended otherwise");
      } else if (answer.promise === "not-stored") {
        if (audited !== CallStatus.INTERRUPTED)
          wrong("answered that it would be closed INTERRUPTED, but it was not");
      } else if (answer.promise === "no-record") {
        if (call.tool === WRITE) wrong("answered that a tool with side effects ran unrecorded");
        if (audited !== undefined || records.length > 0)
          wrong("answered that none of the call is stored, but some is");
      } else if (answer.promise === "unknown") {
        if (audited === undefined)
          wrong("answered that its outcome would be recorded, but none is");
      }
    }
    const summary = [...tally]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, n]) => `${key} ${n}`)
      .join(", ");
    console.info(
      `one story: ${settled ? "" : "(not settled) "}${calls.size} calls (${CALLS / 2} read-only, ${CALLS / 2} with side effects) at c${CONCURRENCY}, nats-server killed ${KILLS} times; ${summary}; ${ran.size} reached a backend; disagreements ${disagreements.length}`,
    );
    if (disagreements.length > 0) {
      // Where the disagreeing calls' records are in the log itself (not the index), for whoever
      // reads the failure: a record missing here was never chained.
      const ids = new Set(disagreements.map((d) => d.split(" ")[0] as string));
      const { state } = await jsm.streams.info(streamNames.auditLog);
      const found: string[] = [];
      for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
        const msg = await jsm.streams
          .getMessage(streamNames.auditLog, { seq })
          .catch(() => undefined);
        if (!msg) continue;
        for (const data of recordSlices(msg.data)) {
          const r = fromBinary(AuditRecordSchema, data);
          if (ids.has(r.callId))
            found.push(
              `${r.callId} log seq ${seq} rec ${r.sequence} ${AuditAction[r.action]} instance "${r.instance}" id ${r.id}`,
            );
        }
      }
      console.info(
        `one story: the disagreeing calls in the log (stream seq ${state.first_seq}..${state.last_seq}):\n${found.join("\n")}`,
      );
    }
    expect(disagreements.length, disagreements.slice(0, 10).join("\n")).toBe(0);
  }, 600_000);
});
