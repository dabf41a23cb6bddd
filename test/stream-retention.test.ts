import { streamNames } from "@toolmesh/nats";
import { CallStatus, TraceEventKind } from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools } from "@toolmesh/sdk";
import {
  chainedEnd,
  chainServices,
  eventually,
  keepFeed,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { RetentionPolicy } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readChainEnds } from "../services/audit/src/log-ends.js";

// Short enough to watch the callback feed expire.
const MAX_AGE_SECONDS = 8;
const CALLS = 5;

// Hot streams hold work, not history: the record stream is a work queue, empty once Audit has
// chained what was written, and the callback feed (a notification, not a record) drops broadcasts
// after TOOLMESH_STREAM_MAX_AGE_SECONDS. The hash-chained audit log keeps every call: its records,
// its trace and its outcome stay readable after the feed expired, the chain verifies from its
// start, and calls go on being recorded after the expiry.
describe("hot streams hold work; the audit log keeps the history", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };
  let auditor: { headers: { authorization: string } };

  const call = async (n: number) => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "retention.echo", arguments: { n } }, agent);
    expect(res.status).toBe(CallStatus.SUCCESS);
    return res;
  };
  /** Resolves with the call's end record once Audit has chained its start and end. */
  const chained = (callId: string) => chainedEnd(stack.auditClient(), auditor, callId);

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
      env: { TOOLMESH_STREAM_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS) },
    });
    served = await serveTools(
      [
        defineTool({
          name: "retention.echo",
          description: "Returns its number.",
          inputSchema: { type: "object", properties: { n: { type: "integer" } } },
          handler: (args: { n?: number }) => ({ n: args.n ?? 0 }),
        }),
      ],
      { registry: { url: stack.registry.url, token: stack.adminToken } },
    );
    await stack.grantAll("retention-agent");
    agent = stack.as(await stack.agentToken("retention-agent"));
    auditor = stack.as(await stack.agentToken("reviewer", { roles: ["auditor"] }));
  });

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("empties the record stream once chained and the feed by age, and still answers every call from the log", async () => {
    const jsm = await stack.nc.jetstreamManager();
    const records = await jsm.streams.info(streamNames.records);
    // Limits retention, no age: Audit purges what it chained (its size is Audit's lag).
    expect(records.config).toMatchObject({ retention: RetentionPolicy.Limits, max_age: 0 });
    // The feed keeps broadcasts only for durables that have not read them: this test's own.
    await keepFeed(stack.nc);
    const feed = await jsm.streams.info(streamNames.callback);
    expect(feed.config.max_age).toBe(MAX_AGE_SECONDS * 1e9);

    const calls = [];
    for (let n = 0; n < CALLS; n++) calls.push(await call(n));
    for (const c of calls) await chained(c.callId);
    // What Audit chained has left the record stream: its size is Audit's lag, not the history.
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.records)).state.messages).toBe(0),
      10_000,
      "the record stream emptied by Audit",
    );
    await eventually(
      async () =>
        expect((await jsm.streams.info(streamNames.callback)).state.messages).toBeGreaterThan(0),
      10_000,
      "the broadcasts on the feed",
    );
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.callback)).state.messages).toBe(0),
      (MAX_AGE_SECONDS + 30) * 1000,
      "the callback feed emptied by age",
    );

    // The log keeps every call: its records, its trace and its outcome.
    const first = calls[0] as (typeof calls)[number];
    const trace = await stack.auditClient().getTrace({ traceId: first.traceId }, auditor);
    expect(trace.events.map((e) => e.kind)).toEqual(
      expect.arrayContaining([TraceEventKind.TOOL_EXECUTE, TraceEventKind.CALLBACK_SUCCESS]),
    );
    for (const c of calls) {
      expect((await chained(c.callId))?.status).toBe(CallStatus.SUCCESS);
      const { event } = await stack.callbackClient().getOutcome({ callId: c.callId }, agent);
      expect(event).toMatchObject({ callId: c.callId, status: CallStatus.SUCCESS });
    }

    // The chain verifies from its start.
    const log = await jsm.streams.info(streamNames.auditLog);
    expect(log.state.first_seq).toBe(1);
    // Log messages are blocks of records: the chain's sequences count the records.
    const ends = await readChainEnds(jsm, log.state);
    expect(ends.first?.sequence).toBe(1n);
    const verified = await stack.auditClient().verifyChain({}, auditor);
    expect(verified).toMatchObject({ ok: true });
    expect(Number(verified.recordsChecked)).toBe(ends.records);

    // Recording goes on after the expiry: the next call is chained after the others.
    const later = await call(CALLS);
    const end = await chained(later.callId);
    expect(end?.sequence).toBeGreaterThan(ends.last?.sequence ?? 0n);
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);
  }, 120_000);
});
