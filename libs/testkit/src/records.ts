import { randomBytes } from "node:crypto";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { streamNames, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  CallStatus,
  RecordBatchSchema,
} from "@toolmesh/proto";
import { encodeRecords, recordSlices } from "@toolmesh/records";
import { type JetStreamManager, type NatsConnection, headers as natsHeaders } from "nats";
import { eventually } from "./eventually.js";
import { TEST_JS_OPTIONS } from "./jetstream.js";
import { type ServiceProcess, startService } from "./service-process.js";

/**
 * Writes records as the Dispatcher does: one RecordBatch on the record stream, for Audit to chain
 * into the log and every reader of the log to derive its views from. Resolves once stored;
 * `msgId` makes JetStream store the batch once; `timeoutMs` bounds the wait for the ack (60 s).
 */
export async function writeRecords(
  nc: NatsConnection,
  records: readonly AuditRecord[],
  options: { msgId?: string; timeoutMs?: number } = {},
): Promise<{ duplicate: boolean }> {
  const h = natsHeaders();
  h.set(TYPE_HEADER, RecordBatchSchema.typeName);
  if (options.msgId) h.set("Nats-Msg-Id", options.msgId);
  const js = nc.jetstream(
    options.timeoutMs ? { ...TEST_JS_OPTIONS, timeout: options.timeoutMs } : TEST_JS_OPTIONS,
  );
  const ack = await js.publish(
    subjects.records("dispatcher"),
    encodeRecords(records.map((r) => toBinary(AuditRecordSchema, r))),
    { headers: h },
  );
  return { duplicate: ack.duplicate };
}

/**
 * A call's end record (TOOL_CALL) as the Dispatcher writes it: a call of agent-1 for user-1 to
 * data.query that ended now after 12 ms, with an empty output for SUCCESS, `backend_error` for
 * FAILURE and `timeout` for INTERRUPTED unless `fields` say otherwise.
 */
export function endRecord(
  callId: string,
  status: CallStatus,
  fields: MessageInitShape<typeof AuditRecordSchema> = {},
): AuditRecord {
  return create(AuditRecordSchema, {
    action: AuditAction.TOOL_CALL,
    callId,
    traceId: randomBytes(16).toString("hex"),
    tool: "data.query",
    agentId: "agent-1",
    userId: "user-1",
    status,
    ...(status === CallStatus.SUCCESS ? { output: {} } : {}),
    ...(status === CallStatus.FAILURE
      ? { errorCode: "backend_error", errorMessage: "the backend refused" }
      : {}),
    ...(status === CallStatus.INTERRUPTED ? { reason: "timeout" } : {}),
    durationMs: 12,
    attempts: 1,
    startedAt: timestampFromMs(Date.now() - 12),
    time: timestampFromMs(Date.now()),
    source: "dispatcher",
    ...fields,
  });
}

/**
 * Starts Audit alone against a test nats-server: what chains the records writeRecords writes
 * into the log that Callback and memory-writer follow, and answers their lookups of a call.
 */
export function startAudit(
  natsUrl: string,
  jwtSecret = randomBytes(32).toString("hex"),
): Promise<ServiceProcess> {
  return startService("audit", {
    NATS_URL: natsUrl,
    TOOLMESH_AUDIT_PORT: "0",
    TOOLMESH_JWT_SECRET: jwtSecret,
  });
}

/**
 * Resolves once Audit chained every record written so far (the record stream is empty) and the
 * durable consumer `durable` acked the whole audit log: a follower of the log is done with it.
 */
export function logConsumed(jsm: JetStreamManager, durable: string, timeoutMs = 60_000) {
  return eventually(
    async () => {
      const waiting = (await jsm.streams.info(streamNames.records)).state.messages;
      if (waiting > 0) throw new Error(`${waiting} record batches not chained yet`);
      const log = await jsm.streams.info(streamNames.auditLog);
      const info = await jsm.consumers.info(streamNames.auditLog, durable);
      if (info.ack_floor.stream_seq < log.state.last_seq || info.num_ack_pending > 0)
        throw new Error(
          `${durable} acked the log to ${info.ack_floor.stream_seq} of ${log.state.last_seq} (${info.num_ack_pending} pending)`,
        );
    },
    timeoutMs,
    `every record chained and the whole audit log acked by ${durable}`,
  );
}

/**
 * The newest record `source` wrote to the record stream that no Audit has taken yet (a stack
 * without Audit keeps them): the last of a batch, or a message of one record.
 */
export async function lastRecordWritten(
  jsm: JetStreamManager,
  source: "dispatcher" | "registry" | "permission" | "callback" | "audit",
): Promise<AuditRecord> {
  const msg = await jsm.streams.getMessage(streamNames.records, {
    last_by_subj: subjects.records(source),
  });
  const bytes =
    msg.header?.get(TYPE_HEADER) === RecordBatchSchema.typeName
      ? recordSlices(msg.data).at(-1)
      : msg.data;
  if (!bytes) throw new Error(`the last record batch of ${source} holds no record`);
  return fromBinary(AuditRecordSchema, bytes);
}
