import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { ensureStream, publishEvent, streamDefinitions, streamNames } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  AuditService,
  BackendEventSchema,
  CallStatus,
  TraceEventKind,
} from "@toolmesh/proto";
import { readLogMessage } from "@toolmesh/records";
import {
  eventually,
  mintJwt,
  type ServiceProcess,
  startNats,
  startService,
  TEST_JS_OPTIONS,
  type TestNats,
  writeRecords,
} from "@toolmesh/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM } from "../src/audit-log.js";
import { queryAll } from "./fixtures.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const SECRET = `s3cr3t-${randomUUID()}`;
const TOTAL = 2000;
/**
 * The records the GetTrace test leaves in the chain (of other traces: not in `traceId`'s count):
 * call-a and call-b one each, call-c two.
 */
const TRACE_RECORDS = 4;

function token(sub: string, roles: string[]): Promise<string> {
  return mintJwt(JWT_SECRET, { sub, roles });
}

function record(i: number, traceId: string): AuditRecord {
  return create(AuditRecordSchema, {
    id: `rec-${i}`,
    time: timestampFromMs(Date.now()),
    action: AuditAction.TOOL_CALL,
    tool: i % 2 ? "data.query" : "files.read",
    agentId: `agent-${i % 5}`,
    userId: `user-${i % 3}`,
    roles: ["agent"],
    callId: `call-${i}`,
    traceId,
    arguments: {
      query: `select ${i}`,
      password: SECRET,
      nested: { API_KEY: SECRET, list: [{ accessToken: SECRET }], keep: "visible" },
    },
    status: i % 10 === 0 ? CallStatus.FAILURE : CallStatus.SUCCESS,
    durationMs: 3,
    attempts: 1,
    source: "test",
  });
}

describe("audit service", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let audit: ServiceProcess | undefined;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };
  const killedLogs: string[] = [];
  const traceId = randomBytes(16).toString("hex");
  let dataDir: string;

  const env = () => ({
    NATS_URL: nats.url,
    TOOLMESH_DATA_DIR: dataDir,
    TOOLMESH_AUDIT_PORT: "0",
    TOOLMESH_JWT_SECRET: JWT_SECRET,
    LOG_LEVEL: "debug",
  });
  const start = async () => {
    audit = await startService("audit", env());
    client = createClient(AuditService, createGrpcTransport({ baseUrl: audit.url }));
  };
  /** Pages through every record matching the query, newest first. */
  const allRecords = (pageSize: number, extra: { traceId?: string } = {}) =>
    queryAll(client, auditor, extra, pageSize);
  const waitForCount = (count: number, timeoutMs = 40_000) =>
    eventually(
      async () => {
        const res = await client.queryRecords({ pageSize: 1000, traceId }, auditor);
        const n = res.nextPageToken
          ? (await allRecords(1000, { traceId })).length
          : res.records.length;
        if (n < count) throw new Error(`only ${n} of ${count} records stored`);
        return n;
      },
      timeoutMs,
      `${count} records stored`,
    );
  /**
   * Writes records `from` to `to` (exclusive) to the record stream as the Dispatcher does, in
   * batches of 50: each batch one stored write, every record chained once by Audit.
   */
  const writeRange = async (from: number, to: number, timeoutMs?: number) => {
    const batches: Promise<unknown>[] = [];
    for (let start = from; start < to; start += 50) {
      const batch = Array.from({ length: Math.min(50, to - start) }, (_, k) =>
        record(start + k, traceId),
      );
      batches.push(writeRecords(nc, batch, timeoutMs ? { timeoutMs } : {}));
    }
    await Promise.all(batches);
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-audit-"));
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    const jsm = await nc.jetstreamManager();
    const streams = streamDefinitions();
    await ensureStream(jsm, streams.records);
    auditor = { headers: { authorization: `Bearer ${await token("reviewer", ["auditor"])}` } };
    await start();
  });

  afterAll(async () => {
    await audit?.stop();
    await nc?.close();
    await nats?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`stores ${TOTAL} records exactly once across a SIGKILL, chained and redacted`, async () => {
    const js = nc.jetstream(TEST_JS_OPTIONS);
    await writeRange(0, TOTAL);
    // Kill it mid-stream, once some but not all records are stored.
    await waitForCount(200);
    const running = audit as ServiceProcess;
    await running.kill();
    killedLogs.push(...running.stdout.lines, ...running.stderr.lines);
    // The same records again, in other batches: each is still chained once.
    await writeRange(0, 100);
    await start();
    expect(await waitForCount(TOTAL)).toBe(TOTAL);

    const records = await allRecords(333, { traceId });
    expect(records).toHaveLength(TOTAL);
    expect(new Set(records.map((r) => r.id)).size).toBe(TOTAL);
    for (let i = 1; i < records.length; i++) {
      expect((records[i - 1] as AuditRecord).sequence).toBeGreaterThan(
        (records[i] as AuditRecord).sequence,
      );
    }
    const sample = records.find((r) => r.id === "rec-7");
    expect(sample?.arguments).toEqual({
      query: "select 7",
      password: "[redacted]",
      nested: { API_KEY: "[redacted]", list: [{ accessToken: "[redacted]" }], keep: "visible" },
    });

    const verify = await client.verifyChain({}, auditor);
    expect(verify).toMatchObject({ ok: true, recordsChecked: BigInt(TOTAL) });

    // The stream itself: exactly TOTAL records, each once, in fewer messages (blocks), chain
    // sequences 1 to TOTAL in order, and never the secret.
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(AUDIT_LOG_STREAM);
    expect(info.state.messages).toBeLessThan(TOTAL);
    const consumer = await js.consumers.get(AUDIT_LOG_STREAM);
    const stored: AuditRecord[] = [];
    let messages = 0;
    const batch = await consumer.fetch({ max_messages: info.state.messages, expires: 5000 });
    for await (const msg of batch) {
      expect(Buffer.from(msg.data).includes(SECRET)).toBe(false);
      stored.push(...readLogMessage(msg.headers, msg.data).map((r) => r.record));
      if (++messages === info.state.messages) break;
    }
    expect(stored).toHaveLength(TOTAL);
    expect(new Set(stored.map((r) => r.id)).size).toBe(TOTAL);
    expect(stored.map((r) => r.sequence)).toEqual(
      Array.from({ length: TOTAL }, (_, i) => BigInt(i + 1)),
    );
    const logs = [
      ...killedLogs,
      ...(audit as ServiceProcess).stdout.lines,
      ...(audit as ServiceProcess).stderr.lines,
    ];
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.some((l) => l.includes(SECRET))).toBe(false);
    // What is chained leaves the record stream: it holds only work not done yet.
    await eventually(
      async () => expect((await jsm.streams.info(streamNames.records)).state.messages).toBe(0),
      10_000,
      "the record stream trimmed",
    );
  });

  it("filters QueryRecords and pages through every record once", async () => {
    const failures = await allRecords(7, { traceId });
    expect(failures).toHaveLength(TOTAL);
    const res = await client.queryRecords(
      { agentId: "agent-2", status: CallStatus.FAILURE, pageSize: 1000 },
      auditor,
    );
    // i % 5 == 2 and i % 10 == 0 never meet.
    expect(res.records).toHaveLength(0);
    const byAgent = await client.queryRecords(
      { agentId: "agent-0", status: CallStatus.FAILURE, pageSize: 1000 },
      auditor,
    );
    expect(byAgent.records).toHaveLength(TOTAL / 10);
    expect(
      byAgent.records.every((r) => r.agentId === "agent-0" && r.status === CallStatus.FAILURE),
    ).toBe(true);
    const byCall = await client.queryRecords({ callId: "call-42" }, auditor);
    expect(byCall.records.map((r) => r.id)).toEqual(["rec-42"]);
    const future = await client.queryRecords(
      { startTime: timestampFromMs(Date.now() + 60_000) },
      auditor,
    );
    expect(future.records).toHaveLength(0);
  });

  it("rejects bad queries with INVALID_ARGUMENT and says what to fix", async () => {
    const now = Date.now();
    await expect(
      client.queryRecords(
        { startTime: timestampFromMs(now), endTime: timestampFromMs(now - 1000) },
        auditor,
      ),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("end_time: must be after start_time"),
    });
    await expect(client.queryRecords({ pageToken: "not-a-token!" }, auditor)).rejects.toMatchObject(
      {
        code: Code.InvalidArgument,
        rawMessage: expect.stringContaining("page_token: malformed page token"),
      },
    );
    await expect(
      client.queryRecords({ pageToken: Buffer.from("v1:12:abc").toString("base64url") }, auditor),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("malformed"),
    });
    const first = await client.queryRecords({ pageSize: 2, agentId: "agent-1" }, auditor);
    await expect(
      client.queryRecords(
        { pageSize: 2, agentId: "agent-3", pageToken: first.nextPageToken },
        auditor,
      ),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("was issued for different filters"),
    });
    await expect(client.queryRecords({ pageSize: 1001 }, auditor)).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("page_size: is 1001; at most 1000 allowed"),
    });
    await expect(client.getTrace({ traceId: "abc.>" }, auditor)).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("trace_id: expected a W3C trace id"),
    });
    // The all-zero id is not a trace id (W3C): the same rule the Dispatcher applies.
    await expect(client.getTrace({ traceId: "0".repeat(32) }, auditor)).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("trace_id: expected a W3C trace id"),
    });
    await expect(client.getTrace({ traceId: "f".repeat(32) }, auditor)).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("answers only admins and auditors", async () => {
    const agent = { headers: { authorization: `Bearer ${await token("agent-1", ["agent"])}` } };
    await expect(client.queryRecords({}, agent)).rejects.toMatchObject({
      code: Code.PermissionDenied,
      rawMessage: expect.stringContaining("needs the role admin or auditor"),
    });
    await expect(client.queryRecords({})).rejects.toMatchObject({ code: Code.Unauthenticated });
    const admin = { headers: { authorization: `Bearer ${await token("root", ["admin"])}` } };
    expect((await client.verifyChain({}, admin)).ok).toBe(true);
  });

  it("GetTrace derives every event of a trace from its calls' records; a call that ends soon is one record", async () => {
    const id = randomBytes(16).toString("hex");
    const base = { traceId: id, tool: "data.query", agentId: "agent-1", source: "dispatcher" };
    const call = (callId: string, fields: MessageInitShape<typeof AuditRecordSchema>) =>
      create(AuditRecordSchema, { ...base, callId, time: timestampFromMs(Date.now()), ...fields });
    const start = (callId: string) =>
      call(callId, {
        action: AuditAction.TOOL_START,
        timeoutMs: 5000,
        runtime: "grpc",
        instance: "dispatcher-1",
        arguments: { q: callId },
      });
    // call-a and call-b end while their starts wait for them: each is chained as one record.
    await writeRecords(nc, [
      start("call-a"),
      start("call-b"),
      call("call-a", {
        action: AuditAction.TOOL_CALL,
        status: CallStatus.SUCCESS,
        output: {},
        attempts: 1,
        events: [
          create(BackendEventSchema, { kind: TraceEventKind.DATA_QUERY, payload: { sql: "x" } }),
        ],
      }),
      call("call-b", {
        action: AuditAction.TOOL_CALL,
        status: CallStatus.FAILURE,
        errorCode: "backend_error",
        attempts: 1,
      }),
    ]);
    // call-c runs longer than its start waits: the start is chained alone, then the end.
    await writeRecords(nc, [start("call-c")]);
    const [lone] = await eventually(
      async () => {
        const res = await client.queryRecords({ callId: "call-c" }, auditor);
        expect(res.records).toHaveLength(1);
        return res.records;
      },
      20_000,
      "call-c's start chained alone",
    );
    expect(lone?.action).toBe(AuditAction.TOOL_START);
    await writeRecords(nc, [
      call("call-c", { action: AuditAction.TOOL_CALL, status: CallStatus.SUCCESS, attempts: 1 }),
    ]);
    const res = await eventually(
      async () => {
        const trace = await client.getTrace({ traceId: id }, auditor);
        expect(trace.events.filter((e) => e.callId === "call-c")).toHaveLength(3);
        return trace;
      },
      20_000,
      "the trace's records indexed",
    );
    const of = (callId: string) =>
      res.events.filter((e) => e.callId === callId).map((e) => [TraceEventKind[e.kind], e.id]);
    const [startAction, endAction] = [AuditAction.TOOL_START, AuditAction.TOOL_CALL];
    expect(of("call-a")).toEqual([
      ["TOOL_EXECUTE", `call-a/${endAction}/1`],
      ["DATA_QUERY", `call-a/${endAction}/2`],
      ["TOOL_RESULT", `call-a/${endAction}/3`],
      ["CALLBACK_SUCCESS", `call-a/${endAction}/4`],
    ]);
    expect(of("call-b").map(([kind]) => kind)).toEqual([
      "TOOL_EXECUTE",
      "TOOL_RESULT",
      "CALLBACK_FAILURE",
    ]);
    expect(of("call-c")).toEqual([
      ["TOOL_EXECUTE", `call-c/${startAction}/1`],
      ["TOOL_RESULT", `call-c/${endAction}/2`],
      ["CALLBACK_SUCCESS", `call-c/${endAction}/3`],
    ]);
    expect(res.events.find((e) => e.kind === TraceEventKind.CALLBACK_SUCCESS)?.source).toBe(
      "callback",
    );
    // The merged record is the end record with the start's part: its arguments and instance.
    const merged = (await client.queryRecords({ callId: "call-a" }, auditor)).records;
    expect(merged).toHaveLength(1);
    expect(merged[0]).toMatchObject({
      action: AuditAction.TOOL_CALL,
      status: CallStatus.SUCCESS,
      arguments: { q: "call-a" },
      instance: "dispatcher-1",
      runtime: "grpc",
      timeoutMs: 5000,
    });
    expect((await client.verifyChain({}, auditor)).ok).toBe(true);
  });

  it("one instance chains while another stands by and takes over when it is killed; a NATS restart loses nothing", async () => {
    const storedBy = (p: ServiceProcess) =>
      p.stdout.lines.filter((l) => l.includes('"audit record stored"')).length;
    const publishRecords = (from: number, to: number) => writeRange(from, to);
    // A record chained while the first instance runs alone shows it holds the lease: after the
    // SIGKILL above it waited for the killed process's lease to expire.
    await publishRecords(TOTAL, TOTAL + 1);
    expect(await waitForCount(TOTAL + 1)).toBe(TOTAL + 1);
    const second = await startService("audit", {
      ...env(),
      TOOLMESH_AUDIT_INDEX_PATH: path.join(dataDir, "second-index.sqlite"),
    });
    try {
      await publishRecords(TOTAL + 1, TOTAL + 500);
      expect(await waitForCount(TOTAL + 500)).toBe(TOTAL + 500);
      // The first holds the lease: the second serves queries but appends nothing.
      expect(storedBy(second)).toBe(0);
      const first = audit as ServiceProcess;
      killedLogs.push(first.lastLines(200));
      await first.kill();
      const killedAt = Date.now();
      client = createClient(AuditService, createGrpcTransport({ baseUrl: second.url }));
      await publishRecords(TOTAL + 500, TOTAL + 1000);
      expect(await waitForCount(TOTAL + 1000)).toBe(TOTAL + 1000);
      // The lease expired on the server and the standby took over within seconds.
      expect(Date.now() - killedAt).toBeLessThan(20_000);
      expect(storedBy(second)).toBeGreaterThan(0);
      expect(await client.verifyChain({}, auditor)).toMatchObject({
        ok: true,
        recordsChecked: BigInt(TOTAL + 1000 + TRACE_RECORDS),
      });
    } finally {
      // A clean stop gives the lease up at once.
      await second.stop();
    }
    await start();
    await nats.stop();
    await nats.start();
    // A short ack timeout: a write lost in the reconnect fails soon and is tried again.
    await eventually(
      () => writeRecords(nc, [record(TOTAL + 1000, traceId)], { timeoutMs: 2000 }),
      20_000,
      "a record written once the client reconnected",
    );
    expect(await waitForCount(TOTAL + 1001)).toBe(TOTAL + 1001);
    await audit?.stop();
    await start();
    expect(await waitForCount(TOTAL + 1001)).toBe(TOTAL + 1001);
    expect((await client.verifyChain({}, auditor)).ok).toBe(true);
  });

  it("VerifyChain reports the first forged record", async () => {
    const js = nc.jetstream(TEST_JS_OPTIONS);
    const before = await client.verifyChain({}, auditor);
    const last = (await client.queryRecords({ pageSize: 1 }, auditor)).records[0] as AuditRecord;
    // Points at the real head, but its hash was not computed by the Audit service.
    const forged = create(AuditRecordSchema, {
      ...record(99_999, traceId),
      sequence: last.sequence + 1n,
      prevHash: last.hash,
      hash: "ff",
    });
    // A one-record message as the Audit service wrote them before blocks.
    const ack = await publishEvent(
      js,
      "toolmesh.auditlog.agent-0.data%2Equery",
      AuditRecordSchema,
      forged,
    );
    await waitForCount(TOTAL + 1002);
    const after = await client.verifyChain({}, auditor);
    expect(before).toMatchObject({
      ok: true,
      recordsChecked: BigInt(TOTAL + 1001 + TRACE_RECORDS),
    });
    expect(after).toMatchObject({
      ok: false,
      firstBreakSequence: BigInt(TOTAL + 1002 + TRACE_RECORDS),
      actualHash: "ff",
    });
    expect(after.reason).toContain("altered");
    // It landed right after the head: the log's newest message, holding only the forged record.
    const jsm = await nc.jetstreamManager();
    expect((await jsm.streams.info(AUDIT_LOG_STREAM)).state.last_seq).toBe(ack.seq);
    const newest = await jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: ack.seq });
    const held = readLogMessage(newest.header, newest.data).map(({ record: r }) => [
      r.id,
      r.sequence,
    ]);
    expect(held).toEqual([[forged.id, BigInt(TOTAL + 1002 + TRACE_RECORDS)]]);
  });
});
