import { stat } from "node:fs/promises";
import path from "node:path";
import { listSegments } from "@toolmesh/archive";
import { ConnectError } from "@toolmesh/errors";
import { streamNames } from "@toolmesh/nats";
import { CallStatus, type DispatchResponse, TraceEventKind } from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  callParts,
  chainServices,
  echoTool,
  eventually,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MiB = 1024 * 1024;
/** Every stream a call passes through, and the audit log's hot window, hold at most this. */
const LIMIT = 8 * MiB;
const CALLS = Number(process.env.LIMITS_CALLS ?? 30_000);
const CONCURRENCY = Number(process.env.LIMITS_CONCURRENCY ?? 32);
const TOOL = "limits.echo";
const AGENT = "limits-agent";
/** The streams a call's records and views pass through, each limited to LIMIT. */
const STREAMS = [streamNames.records, streamNames.callback, streamNames.auditLog] as const;

// Streams that never fill up: with every per-call stream — the record stream, the callback feed —
// and the audit log's hot window limited to 8 MiB, 30,000 calls (several times what any of them
// holds) are all accepted, because the hot streams hold work, not history, and the log hands its
// oldest blocks to the archive. The oldest call is still readable, from the archive, through
// QueryRecords, GetTrace and GetOutcome, and the chain verifies over the archive and the log.
describe("every per-call stream limited to 8 MiB", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };
  let auditor: { headers: { authorization: string } };

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
      env: {
        TOOLMESH_RECORDS_MAX_BYTES: String(LIMIT),
        TOOLMESH_CALLBACK_STREAM_MAX_BYTES: String(LIMIT),
        TOOLMESH_AUDIT_MAX_BYTES: String(LIMIT),
        // Segments of 512 KiB: the archive takes the log's oldest blocks many times over.
        TOOLMESH_AUDIT_SEGMENT_BYTES: "512KiB",
      },
    });
    await stack.grantAll(AGENT);
    agent = stack.as(await stack.agentToken(AGENT));
    auditor = stack.as(await stack.agentToken("limits-auditor", { roles: ["auditor"] }));
    served = await serveOnStack(stack, [echoTool(TOOL)]);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it(`${CALLS} calls: none refused, the oldest still readable, the chain verifies`, async () => {
    const jsm = await stack.nc.jetstreamManager();
    for (const name of STREAMS)
      expect((await jsm.streams.info(name)).config.max_bytes, name).toBe(LIMIT);
    // One client: one HTTP/2 connection for every call.
    const dispatcher = stack.dispatcherClient();
    const dispatch = (n: number) =>
      dispatcher.dispatch({ tool: TOOL, arguments: { text: `call ${n}` } }, agent);

    // The oldest call, alone, before the load.
    const oldest: DispatchResponse = await dispatch(0);
    expect(oldest.status).toBe(CallStatus.SUCCESS);

    let next = 1;
    let accepted = 1;
    const refused: string[] = [];
    const largest = new Map<string, number>(STREAMS.map((name) => [name, 0]));
    let running = true;
    const sampling = (async () => {
      while (running) {
        for (const name of STREAMS) {
          const { bytes } = (await jsm.streams.info(name)).state;
          largest.set(name, Math.max(largest.get(name) ?? 0, bytes));
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const started = Date.now();
    const worker = async () => {
      while (next < CALLS) {
        const n = next++;
        try {
          const res = await dispatch(n);
          expect(res.status).toBe(CallStatus.SUCCESS);
          accepted++;
        } catch (error) {
          refused.push(ConnectError.from(error).message);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const callsMs = Date.now() - started;
    // Everything written is chained: the record stream holds nothing more.
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.records)).state.messages).toBe(0),
      120_000,
      "every record chained",
    );
    running = false;
    await sampling;
    expect(refused.length, `calls refused, the first with: ${refused[0]}`).toBe(0);
    expect(accepted).toBe(CALLS);
    for (const [name, bytes] of largest) expect(bytes, name).toBeLessThanOrEqual(LIMIT);

    // The log handed its oldest blocks to the archive: the oldest call is no longer in it.
    const log = (await jsm.streams.info(streamNames.auditLog)).state;
    expect(log.first_seq).toBeGreaterThan(1);
    const segments = await listSegments(path.join(stack.dataDir, "audit", "archive"));
    expect(segments[0]?.firstStreamSeq).toBe(1);
    const archiveBytes = (await Promise.all(segments.map((s) => stat(s.file)))).reduce(
      (n, s) => n + s.size,
      0,
    );

    // The oldest call, read from the archive: its records, its trace and its outcome.
    const { records } = await stack.auditClient().queryRecords({ callId: oldest.callId }, auditor);
    expect(callParts(records)).toEqual(["end SUCCESS", "start"]);
    const trace = await stack.auditClient().getTrace({ traceId: oldest.traceId }, auditor);
    expect(trace.events.map((e) => e.kind)).toEqual(
      expect.arrayContaining([
        TraceEventKind.TOOL_EXECUTE,
        TraceEventKind.TOOL_RESULT,
        TraceEventKind.CALLBACK_SUCCESS,
      ]),
    );
    const { event } = await stack.callbackClient().getOutcome({ callId: oldest.callId }, agent);
    expect(event).toMatchObject({
      callId: oldest.callId,
      status: CallStatus.SUCCESS,
      output: { text: "call 0" },
    });

    const verifyStarted = Date.now();
    const verified = await stack.auditClient().verifyChain({}, auditor);
    const verifyMs = Date.now() - verifyStarted;
    expect(verified).toMatchObject({ ok: true });
    // A record a call at least: its start and end, chained as one when it ended soon.
    expect(Number(verified.recordsChecked)).toBeGreaterThanOrEqual(CALLS);

    const sizes = [...largest].map(([name, bytes]) => `${name} ${bytes}`).join(", ");
    console.info(
      `stream limits: ${CALLS} calls at c${CONCURRENCY} in ${(callsMs / 1000).toFixed(1)} s (${Math.round((CALLS * 1000) / callsMs)} calls/s), ${refused.length} refused; largest of each stream, limited to ${LIMIT} bytes: ${sizes}; the log keeps stream seq ${log.first_seq} to ${log.last_seq}, the archive ${segments.length} segments (${archiveBytes} bytes) from seq 1; the oldest call read back (${records.length} records, ${trace.events.length} trace events, outcome ${CallStatus[event?.status ?? 0]}); VerifyChain checked ${verified.recordsChecked} records in ${verifyMs} ms`,
    );
  }, 600_000);
});
