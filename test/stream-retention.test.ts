import { Code, ConnectError } from "@toolmesh/errors";
import { CallStatus } from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools } from "@toolmesh/sdk";
import { chainServices, eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readChainEnds } from "../services/audit/src/log-ends.js";

// Long enough for Audit to chain a call's record before its input expires, even on a loaded
// machine; short enough to watch the expiry happen.
const MAX_AGE_SECONDS = 8;
const CALLS = 5;

// Retention by age: trace events, audit inputs, outcomes and callback events leave their streams
// after TOOLMESH_STREAM_MAX_AGE_SECONDS, while the hash-chained audit log (no age limit; its
// archive keeps what leaves it) keeps every call and still verifies, and calls go on being
// recorded after the expiry.
describe("event streams expire by age; the audit log keeps the chain", () => {
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
  /** Resolves with the call's record once Audit has chained it. */
  const chained = (callId: string) =>
    eventually(
      async () => {
        const { records } = await stack.auditClient().queryRecords({ callId }, auditor);
        expect(records).toHaveLength(1);
        return records[0];
      },
      30_000,
      `the audit record of ${callId}`,
    );

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

  it("drops expired trace events and outcomes, and the chain of their audit records still verifies", async () => {
    const jsm = await stack.nc.jetstreamManager();
    const trace = await jsm.streams.info("TOOLMESH_TRACE");
    expect(trace.config.max_age).toBe(MAX_AGE_SECONDS * 1e9);
    const calls = [];
    for (let n = 0; n < CALLS; n++) calls.push(await call(n));
    for (const c of calls) await chained(c.callId);
    const first = calls[0] as (typeof calls)[number];
    // Their trace is readable while it is young.
    expect(
      (await stack.auditClient().getTrace({ traceId: first.traceId }, auditor)).events.length,
    ).toBeGreaterThan(0);

    await eventually(
      async () => {
        for (const name of [
          "TOOLMESH_TRACE",
          "TOOLMESH_OUTCOME",
          "TOOLMESH_AUDIT",
          "TOOLMESH_CALLBACK",
        ]) {
          expect((await jsm.streams.info(name)).state.messages, name).toBe(0);
        }
      },
      (MAX_AGE_SECONDS + 30) * 1000,
      "every event stream emptied by age",
    );
    const gone = await stack
      .auditClient()
      .getTrace({ traceId: first.traceId }, auditor)
      .catch((error: unknown) => ConnectError.from(error));
    expect(gone).toBeInstanceOf(ConnectError);
    expect((gone as ConnectError).code).toBe(Code.NotFound);

    // The log keeps every call, linked, and the chain verifies from its start.
    for (const c of calls) expect((await chained(c.callId))?.callId).toBe(c.callId);
    const log = await jsm.streams.info("TOOLMESH_AUDIT_LOG");
    expect(log.state.first_seq).toBe(1);
    // Log messages are blocks of records: the chain's sequences count the records.
    const ends = await readChainEnds(jsm, log.state);
    expect(ends.first?.sequence).toBe(1n);
    const verified = await stack.auditClient().verifyChain({}, auditor);
    expect(verified).toMatchObject({ ok: true });
    expect(Number(verified.recordsChecked)).toBe(ends.records);

    // Recording goes on after the expiry: the next call is chained after the others.
    const later = await call(CALLS);
    const record = await chained(later.callId);
    expect(record?.sequence).toBe((ends.last?.sequence ?? 0n) + 1n);
    expect((await stack.auditClient().verifyChain({}, auditor)).ok).toBe(true);
  }, 120_000);
});
