import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets, streamNames } from "@toolmesh/nats";
import { AuditAction, AuditLogHolder, AuditLogHoldSchema, CallStatus } from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  callParts,
  chainServices,
  eventually,
  recordsByCall,
  startStack,
  TEST_JS_OPTIONS,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveRecordingTool } from "./recording-tool.js";

const MiB = 1024 * 1024;
/** The record stream's byte limit, and the room the Dispatcher keeps in it for running calls. */
const RECORDS_MAX_BYTES = 2 * MiB;
const MARGIN_BYTES = 256 * 1024;
/** The hot audit log's byte limit: a stalled follower of the log holds it full. */
const AUDIT_MAX_BYTES = MiB;
const TOOL = "backlog.write";
const AGENT = "backlog-agent";
/** Arguments of about 2 KiB, so the stream fills in hundreds of calls, not tens of thousands. */
const PAD = "p".repeat(2048);
/** Calls under way at once while the stream fills. */
const CONCURRENCY = 8;

// With its consumers keeping up, the record stream holds only what is on its way to Audit: the
// Dispatcher, writing the stream's limit over many times within seconds, never refuses a call.
describe("consumers keeping up", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };

  beforeAll(async () => {
    stack = await startStack({
      services: chainServices,
      env: { TOOLMESH_RECORDS_MAX_BYTES: String(RECORDS_MAX_BYTES) },
      serviceEnv: { dispatcher: { TOOLMESH_RECORD_STORE_MARGIN_BYTES: String(MARGIN_BYTES) } },
    });
    await stack.grantAll(AGENT);
    agent = stack.as(await stack.agentToken(AGENT));
    served = await serveRecordingTool(stack, TOOL, new Set());
    // The Dispatcher has the tool in its snapshot before the run counts refusals.
    await eventually(
      () =>
        stack
          .dispatcherClient()
          .dispatch({ tool: TOOL, arguments: {}, context: { callId: randomUUID() } }, agent),
      20_000,
      "a first call accepted",
    );
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("calls at full speed are never refused while the stream has room", async () => {
    // Larger arguments than the other cases, so the Dispatcher writes the stream's limit many
    // times over within seconds while Audit takes each batch as it lands.
    const pad = "q".repeat(8192);
    let accepted = 0;
    const refused: string[] = [];
    let largestBacklog = 0;
    const until = Date.now() + 10_000;
    const backlogBytes = async () =>
      (await (await stack.nc.jetstreamManager()).streams.info(streamNames.records)).state.bytes;
    const worker = async () => {
      while (Date.now() < until) {
        try {
          await stack
            .dispatcherClient()
            .dispatch({ tool: TOOL, arguments: { pad }, context: { callId: randomUUID() } }, agent);
          accepted++;
        } catch (error) {
          refused.push(ConnectError.from(error).rawMessage);
        }
      }
    };
    const sampling = (async () => {
      while (Date.now() < until) {
        largestBacklog = Math.max(largestBacklog, await backlogBytes());
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await Promise.all([sampling, ...Array.from({ length: CONCURRENCY }, worker)]);
    const written = accepted * (pad.length + 1024);
    console.info(
      `backlog (consumers keeping up): ${accepted} calls in 10 s with 8 KiB arguments (about ${written} bytes of records, ${(written / RECORDS_MAX_BYTES).toFixed(1)}× the stream's limit), TOOLMESH_RECORDS at most ${largestBacklog} of ${RECORDS_MAX_BYTES} bytes, ${refused.length} refused${refused[0] ? ` (${refused[0]})` : ""}`,
    );
    expect(largestBacklog).toBeLessThan(RECORDS_MAX_BYTES - MARGIN_BYTES);
    expect(refused.length, `calls refused, the first with: ${refused[0]}`).toBe(0);
    expect(written).toBeGreaterThan(RECORDS_MAX_BYTES);
  }, 120_000);
});

// Hot streams hold work: the record stream keeps what Audit has not chained yet, so its size is a
// consumer's lag. With a consumer stopped for a while — Audit itself, or Callback, a follower of
// the log that holds the log full until it has read it — the record stream grows; the Dispatcher
// goes on accepting calls until that backlog reaches the stream's limit (less the room it keeps
// for calls under way), and only then refuses, RESOURCE_EXHAUSTED naming TOOLMESH_RECORDS, before
// any tool runs. When the consumer comes back, everything waiting is processed: every accepted
// call has its start and end records once, every refusal its record, and calls are accepted again.
describe("a consumer stopped for a while", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };
  let auditor: { headers: { authorization: string } };
  /** Call ids that reached the backend. */
  const ran = new Set<string>();

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
      env: {
        TOOLMESH_RECORDS_MAX_BYTES: String(RECORDS_MAX_BYTES),
        TOOLMESH_AUDIT_MAX_BYTES: String(AUDIT_MAX_BYTES),
        TOOLMESH_AUDIT_SEGMENT_BYTES: "128KiB",
      },
      serviceEnv: { dispatcher: { TOOLMESH_RECORD_STORE_MARGIN_BYTES: String(MARGIN_BYTES) } },
    });
    await stack.grantAll(AGENT);
    agent = stack.as(await stack.agentToken(AGENT));
    auditor = stack.as(await stack.agentToken("backlog-auditor", { roles: ["auditor"] }));
    served = await serveRecordingTool(stack, TOOL, ran);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  const backlogBytes = async () =>
    (await (await stack.nc.jetstreamManager()).streams.info(streamNames.records)).state.bytes;

  /**
   * Calls at CONCURRENCY until the first refusal; the record stream's size is read before each
   * call, so a refusal that came early would show a stream far from full.
   */
  async function callUntilRefused() {
    const accepted: string[] = [];
    const refused: { callId: string; error: ConnectError }[] = [];
    let smallestBacklogAtRefusal = Number.POSITIVE_INFINITY;
    let stop = false;
    const worker = async () => {
      while (!stop && accepted.length < 20_000) {
        const callId = randomUUID();
        const before = await backlogBytes();
        try {
          const res = await stack
            .dispatcherClient()
            .dispatch({ tool: TOOL, arguments: { pad: PAD }, context: { callId } }, agent);
          expect(res.status).toBe(CallStatus.SUCCESS);
          accepted.push(callId);
        } catch (error) {
          refused.push({ callId, error: ConnectError.from(error) });
          smallestBacklogAtRefusal = Math.min(smallestBacklogAtRefusal, before);
          stop = true;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return { accepted, refused, smallestBacklogAtRefusal };
  }

  /** Asserts what every call of a run left once the consumer is back, and that calls run again. */
  async function everythingProcessed(run: Awaited<ReturnType<typeof callUntilRefused>>) {
    const jsm = await stack.nc.jetstreamManager();
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.records)).state.messages).toBe(0),
      120_000,
      "the record stream drained",
    );
    const byCall = await eventually(
      async () => {
        const found = await recordsByCall(stack.auditClient(), auditor, [
          { agentId: AGENT, tool: TOOL },
        ]);
        for (const id of run.accepted) expect(found.has(id), `records of ${id}`).toBe(true);
        return found;
      },
      60_000,
      "the records of every accepted call",
    );
    for (const id of run.accepted) {
      const records = byCall.get(id) ?? [];
      expect(callParts(records), `records of ${id}`).toEqual(["end SUCCESS", "start"]);
    }
    for (const [i, { callId }] of run.refused.entries()) {
      // A refused call never ran. The first was refused before anything (the stream's room is
      // checked), and that refusal is recorded; one under way as the stream filled may have been
      // refused by the stream itself, when neither its start nor a refusal could be stored.
      expect(ran.has(callId), `refused call ${callId} ran`).toBe(false);
      const records = (byCall.get(callId) ?? []).map((r) => [r.action, r.errorCode]);
      const refusal = [[AuditAction.TOOL_REFUSED, "RESOURCE_EXHAUSTED"]];
      if (i === 0) expect(records, `records of the refused call ${callId}`).toEqual(refusal);
      else expect([[], refusal], `records of the refused call ${callId}`).toContainEqual(records);
    }
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);
    // The Dispatcher reads the stream's room on a timer: calls are accepted again shortly.
    const res = await eventually(
      () =>
        stack
          .dispatcherClient()
          .dispatch({ tool: TOOL, arguments: {}, context: { callId: randomUUID() } }, agent),
      20_000,
      "a call accepted after the backlog drained",
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
  }

  /** The refusal the run ended with: RESOURCE_EXHAUSTED naming the record stream, once it was full. */
  function expectRefusedWhenFull(run: Awaited<ReturnType<typeof callUntilRefused>>) {
    const [first] = run.refused;
    expect(first?.error.code).toBe(Code.ResourceExhausted);
    expect(first?.error.rawMessage).toContain(streamNames.records);
    // Refused only once the backlog reached the limit, less the room kept for calls under way
    // (and the records of the calls under way when it was read).
    const underWay = CONCURRENCY * 2 * (PAD.length + 1024);
    expect(run.smallestBacklogAtRefusal).toBeGreaterThanOrEqual(
      RECORDS_MAX_BYTES - MARGIN_BYTES - underWay,
    );
  }

  /** Stops a consumer with SIGKILL and calls until the first refusal; the run, how full, how long. */
  async function fillWithout(service: "audit" | "callback") {
    await stack.service(service).kill();
    const started = Date.now();
    const run = await callUntilRefused();
    const full = await backlogBytes();
    const ms = Date.now() - started;
    expectRefusedWhenFull(run);
    return { run, full, ms };
  }

  it("Audit away: the record stream grows to its limit, then calls are refused naming it; all chained once Audit is back", async () => {
    const { run, full, ms } = await fillWithout("audit");
    // Nothing was refused while the stream had room: what was accepted filled it.
    expect(run.accepted.length).toBeGreaterThan(100);
    await stack.service("audit").start();
    const back = Date.now();
    await everythingProcessed(run);
    console.info(
      `backlog (Audit away): ${run.accepted.length} calls accepted in ${ms} ms, TOOLMESH_RECORDS at ${full} of ${RECORDS_MAX_BYTES} bytes (refusals below ${RECORDS_MAX_BYTES - MARGIN_BYTES}), ${run.refused.length} refused; all chained ${Date.now() - back} ms after Audit came back`,
    );
  }, 300_000);

  it("Callback away: the log fills and waits for it (log.hold names it), then the record stream; all processed once it is back", async () => {
    const kv = await stack.nc.jetstream(TEST_JS_OPTIONS).views.kv(buckets.audit.name);
    const hold = async () => {
      const entry = await kv.get(buckets.audit.logHoldKey);
      return entry ? fromBinary(AuditLogHoldSchema, entry.value) : undefined;
    };
    const { run, full, ms } = await fillWithout("callback");
    // What holds the log, and so the record stream, is named for an operator.
    expect(await hold()).toMatchObject({
      held: true,
      holder: AuditLogHolder.CONSUMER,
      consumer: "callback",
    });
    await stack.service("callback").start();
    const back = Date.now();
    await everythingProcessed(run);
    // Callback read what it missed: every accepted call's outcome.
    for (const callId of run.accepted) {
      const { event } = await stack.callbackClient().getOutcome({ callId }, agent);
      expect(event?.status, `outcome of ${callId}`).toBe(CallStatus.SUCCESS);
    }
    await eventually(async () => expect((await hold())?.held).toBe(false), 30_000, "released");
    console.info(
      `backlog (Callback away): ${run.accepted.length} calls accepted in ${ms} ms, TOOLMESH_RECORDS at ${full} of ${RECORDS_MAX_BYTES} bytes behind a log held by callback, ${run.refused.length} refused; all processed ${Date.now() - back} ms after Callback came back`,
    );
  }, 300_000);
});
