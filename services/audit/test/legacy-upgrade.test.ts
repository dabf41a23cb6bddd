import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { ensureStream, JetStreamApiCodes, jetStreamErrorCode, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  type AuditService,
  CallLeaseSchema,
  CallStatus,
} from "@toolmesh/proto";
import { eventually, type ServiceProcess } from "@toolmesh/testkit";
import { AckPolicy, type JetStreamManager, headers as natsHeaders, RetentionPolicy } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLogStream } from "../src/audit-log.js";
import {
  type AuditBus,
  appendHistory,
  bearer,
  historyRecord,
  queryAll,
  startAudit,
  startAuditBus,
} from "./fixtures.js";

const JWT_SECRET = "legacy-upgrade-secret-0123456789abcdef";
const LEGACY_INPUT = "TOOLMESH_AUDIT";
const LEGACY_INFLIGHT = "TOOLMESH_INFLIGHT";
/** Records the earlier version published; its Audit chained the first CHAINED, and acked them. */
const PUBLISHED = 10;
const CHAINED = 4;
/** One more it chained but did not ack before it stopped (a crash between the two). */
const CHAINED_NOT_ACKED = CHAINED;

// A data directory written by the earlier version: records in its input stream that its Audit
// had not chained yet, and leases of calls running when it stopped. The new Audit takes both over
// once: every record is in the chain once, a call left running is closed INTERRUPTED, and the
// two streams are gone.
describe("an upgrade from the streams of an earlier toolmesh", () => {
  let bus: AuditBus;
  let audit: ServiceProcess;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };
  let jsm: JetStreamManager;
  const t0 = Date.now() - 60_000;

  /** The earlier Dispatcher's lease of a call that was running. */
  const lease = (callId: string) =>
    create(CallLeaseSchema, {
      instance: "old-dispatcher",
      callId,
      traceId: "ab".repeat(16),
      tool: "data.query",
      agentId: "agent-1",
      userId: "user-1",
      startedAt: timestampFromMs(t0),
      deadline: timestampFromMs(t0 + 30_000),
    });

  beforeAll(async () => {
    bus = await startAuditBus();
    jsm = await bus.nc.jetstreamManager();
    const js = bus.nc.jetstream();
    // The earlier input stream and its Audit's durable consumer.
    await jsm.streams.add({
      name: LEGACY_INPUT,
      subjects: ["toolmesh.audit.>"],
      retention: RetentionPolicy.Limits,
    });
    for (let i = 0; i < PUBLISHED; i++) {
      const r = historyRecord(i, t0);
      const h = natsHeaders();
      h.set(TYPE_HEADER, AuditRecordSchema.typeName);
      await js.publish(
        `toolmesh.audit.dispatcher.${r.agentId}.data%2Equery`,
        toBinary(AuditRecordSchema, r),
        { headers: h, msgID: r.id },
      );
    }
    await jsm.consumers.add(LEGACY_INPUT, {
      durable_name: "audit",
      ack_policy: AckPolicy.Explicit,
    });
    // Its Audit chained records 0..CHAINED (the last of them unacked) into the log.
    await ensureStream(jsm, auditLogStream({ replicas: 1, maxBytes: 0 }));
    await appendHistory(js, { sequence: 0n, hash: "" }, 0, CHAINED + 1, t0);
    const consumer = await js.consumers.get(LEGACY_INPUT, "audit");
    for (let i = 0; i < CHAINED; i++) {
      const msg = await consumer.next({ expires: 5000 });
      await msg?.ackAck();
    }
    // Calls running when it stopped: one whose end record is among the unchained records, one
    // that never ended.
    await jsm.streams.add({ name: LEGACY_INFLIGHT, subjects: ["toolmesh.inflight.>"] });
    for (const callId of ["call-7", "lost-1"])
      await js.publish(
        `toolmesh.inflight.old-dispatcher.${callId}`,
        toBinary(CallLeaseSchema, lease(callId)),
      );
    auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
    ({ audit, client } = await startAudit(bus, JWT_SECRET));
  });

  afterAll(async () => {
    await audit?.stop();
    await bus?.destroy();
  });

  /** Every record the chain holds, oldest first, once the upgrade's records are indexed. */
  const upgraded = (count: number) =>
    eventually(
      async () => {
        const records = (await queryAll(client, auditor, {})).reverse();
        expect(records).toHaveLength(count);
        return records;
      },
      30_000,
      `${count} records chained`,
    );

  it("chains every record its Audit had not, once, and closes the call left running", async () => {
    const records: AuditRecord[] = await upgraded(PUBLISHED + 1);
    const ids = records.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 0; i < PUBLISHED; i++) expect(ids).toContain(`hist-${i}`);
    // The one chained but not acked is not chained twice; the ones after it follow in order.
    expect(ids.slice(0, CHAINED_NOT_ACKED + 1)).toEqual(
      Array.from({ length: CHAINED_NOT_ACKED + 1 }, (_, i) => `hist-${i}`),
    );
    const lost = records.filter((r) => r.callId === "lost-1");
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({
      action: AuditAction.TOOL_CALL,
      status: CallStatus.INTERRUPTED,
      reason: "dispatcher_lost",
      tool: "data.query",
      agentId: "agent-1",
    });
    // call-7 ended: its own record tells it, not an interruption.
    expect(records.filter((r) => r.callId === "call-7").map((r) => r.status)).toEqual([
      CallStatus.SUCCESS,
    ]);
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: BigInt(PUBLISHED + 1),
    });
  });

  it("deletes the earlier streams once taken over, and a restart changes nothing", async () => {
    for (const stream of [LEGACY_INPUT, LEGACY_INFLIGHT]) {
      const gone = await jsm.streams.info(stream).then(
        () => undefined,
        (error: unknown) => jetStreamErrorCode(error),
      );
      expect(gone, stream).toBe(JetStreamApiCodes.StreamNotFound);
    }
    await audit.stop();
    ({ audit, client } = await startAudit(bus, JWT_SECRET));
    expect(await upgraded(PUBLISHED + 1)).toHaveLength(PUBLISHED + 1);
    expect(audit.stdout.lines.some((l) => l.includes("earlier toolmesh"))).toBe(false);
  });
});
