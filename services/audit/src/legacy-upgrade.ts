import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { callFields, type Logger } from "@toolmesh/log";
import {
  JetStreamApiCodes,
  type JetStreamPublisher,
  jetStreamErrorCode,
  legacyStreamNames,
  pullOptions,
  subjects,
  TYPE_HEADER,
} from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  CallLeaseSchema,
  RecordBatchSchema,
} from "@toolmesh/proto";
import { encodeRecords, ofCall } from "@toolmesh/records";
import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  headers as natsHeaders,
} from "nats";
import { interruptedEnd } from "./interrupted-end.js";

/** The durable consumer of the earlier versions' Audit on their record input stream. */
const LEGACY_AUDIT_CONSUMER = "audit";
/** Records moved per batch: well inside NATS max_payload for records of the earlier size bound. */
const BATCH_RECORDS = 128;
const BATCH_BYTES = 512 * 1024;

/** What an upgrade moved: records not chained yet, and calls left running, closed. */
export interface UpgradeReport {
  records: number;
  interrupted: number;
}

/**
 * Takes over what a data directory of an earlier toolmesh left in its streams, so an upgrade
 * loses no record:
 * - `TOOLMESH_AUDIT`, the record input of earlier versions: the records its Audit had not
 *   chained (above its consumer's ack floor; all when it never ran) are written to the record
 *   stream as batches, under message ids that make a retried upgrade store each batch once (and
 *   the chain writer keeps a record it already holds once, by its id).
 * - `TOOLMESH_INFLIGHT`, the leases of calls running when the earlier stack stopped: each call
 *   whose end record is nowhere (not in the log, not among the records moved) is closed
 *   INTERRUPTED `dispatcher_lost`, as the earlier sweeper would have.
 * Both streams are deleted once done. Their siblings (`TOOLMESH_TRACE`, `TOOLMESH_OUTCOME`) hold
 * views of records the log has, are no longer written and empty themselves at their age limit.
 * Runs in the chain writer's lease, before it takes records.
 */
export async function upgradeLegacyStreams(deps: {
  js: JetStreamClient;
  jsm: JetStreamManager;
  publisher: Pick<JetStreamPublisher, "publish">;
  /** True when the log already holds this call's end record. */
  hasEnd: (callId: string) => boolean;
  log: Logger;
}): Promise<UpgradeReport> {
  const ended = new Set<string>();
  const records = await moveUnchainedRecords(deps, ended);
  const interrupted = await closeLeftRunning(deps, ended);
  if (records > 0 || interrupted > 0)
    deps.log.warn(
      { records, interrupted },
      "upgraded the streams of an earlier toolmesh: its records not chained yet are written to TOOLMESH_RECORDS, its calls left running are closed INTERRUPTED",
    );
  return { records, interrupted };
}

async function moveUnchainedRecords(
  deps: Parameters<typeof upgradeLegacyStreams>[0],
  ended: Set<string>,
): Promise<number> {
  const { js, jsm } = deps;
  const stream = legacyStreamNames.auditInput;
  const info = await streamInfo(jsm, stream);
  if (!info) return 0;
  const floor = await jsm.consumers
    .info(stream, LEGACY_AUDIT_CONSUMER)
    .then((c) => c.ack_floor.stream_seq)
    .catch((error: unknown) => {
      // Its Audit never ran: nothing of the stream is chained.
      if (jetStreamErrorCode(error) === JetStreamApiCodes.ConsumerNotFound) return 0;
      throw error;
    });
  const from = Math.max(floor + 1, info.state.first_seq);
  const last = info.state.last_seq;
  let moved = 0;
  if (info.state.messages > 0 && from <= last) {
    const consumer = await js.consumers.get(stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
    });
    let batch: Uint8Array[] = [];
    let bytes = 0;
    let batchFrom = from;
    const flush = async (to: number) => {
      if (batch.length === 0) return;
      const h = natsHeaders();
      h.set(TYPE_HEADER, RecordBatchSchema.typeName);
      h.set("Nats-Msg-Id", `upgrade-${stream}-${batchFrom}-${to}`);
      await deps.publisher.publish(subjects.records("audit"), encodeRecords(batch), h);
      moved += batch.length;
      batch = [];
      bytes = 0;
      batchFrom = to + 1;
    };
    const messages = await consumer.consume(pullOptions({ max_messages: BATCH_RECORDS }));
    try {
      for await (const msg of messages) {
        const record = fromBinary(AuditRecordSchema, msg.data);
        if (record.action === AuditAction.TOOL_CALL && ofCall(record)) ended.add(record.callId);
        batch.push(msg.data);
        bytes += msg.data.length;
        if (batch.length >= BATCH_RECORDS || bytes >= BATCH_BYTES) await flush(msg.seq);
        if (msg.seq >= last || msg.info.pending === 0) break;
      }
      await flush(last);
    } finally {
      await messages.close();
    }
  }
  await jsm.streams.delete(stream);
  return moved;
}

async function closeLeftRunning(
  deps: Parameters<typeof upgradeLegacyStreams>[0],
  ended: Set<string>,
): Promise<number> {
  const { js, jsm } = deps;
  const stream = legacyStreamNames.inflight;
  const info = await streamInfo(jsm, stream);
  if (!info) return 0;
  let closed = 0;
  if (info.state.messages > 0) {
    const now = Date.now();
    // From its first sequence: nats.js's ordered consumer delivers nothing with DeliverPolicy.All.
    const consumer = await js.consumers.get(stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: info.state.first_seq,
    });
    const messages = await consumer.consume(pullOptions({ max_messages: BATCH_RECORDS }));
    try {
      for await (const msg of messages) {
        const lease = fromBinary(CallLeaseSchema, msg.data);
        if (!ended.has(lease.callId) && !deps.hasEnd(lease.callId)) {
          const end = interruptedEnd(lease, "dispatcher_lost", now);
          const h = natsHeaders();
          h.set(TYPE_HEADER, RecordBatchSchema.typeName);
          h.set("Nats-Msg-Id", `sweep-${lease.callId}`);
          await deps.publisher.publish(
            subjects.records("audit"),
            encodeRecords([toBinary(AuditRecordSchema, end)]),
            h,
          );
          deps.log.warn(
            { ...callFields(lease), tool: lease.tool },
            "closed a call an earlier toolmesh left running",
          );
          closed++;
        }
        if (msg.info.pending === 0) break;
      }
    } finally {
      await messages.close();
    }
  }
  await jsm.streams.delete(stream);
  return closed;
}

/** A stream's info, or undefined when there is no such stream. */
async function streamInfo(jsm: JetStreamManager, stream: string) {
  try {
    return await jsm.streams.info(stream);
  } catch (error) {
    if (jetStreamErrorCode(error) === JetStreamApiCodes.StreamNotFound) return undefined;
    throw error;
  }
}
