import type { JsonObject } from "@bufbuild/protobuf";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { CHAIN_VERSION, withChainVersion } from "@toolmesh/archive";
import { TYPE_HEADER } from "@toolmesh/nats";
import { AuditAction, type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { ofCall, recordKey, recordSlices, startsCall } from "@toolmesh/records";
import type { JsMsg } from "nats";
import { type RecordChanges, recordBody, sameJson } from "./record-encoding.js";

/** A record to chain, and its encoding without the chain fields. */
export interface ReceivedRecord {
  record: AuditRecord;
  body: Uint8Array;
}

/**
 * The records to chain from one message of the record stream: a RecordBatch (or one
 * AuditRecord, as messages were before batches), each decoded, given a time when its publisher
 * left it out, its arguments redacted. The only place that knows what publishers send, so a
 * change in what a publisher writes per call is adapted here. Throws when the message is neither.
 */
export function recordsToChain(msg: JsMsg, redact: (value: unknown) => unknown): ReceivedRecord[] {
  const storedMs = Math.floor(msg.info.timestampNanos / 1e6);
  const single = msg.headers?.get(TYPE_HEADER) === AuditRecordSchema.typeName;
  const slices = single ? [msg.data] : recordSlices(msg.data);
  return slices.map((data) => recordToChain(data, redact, storedMs, msg.seq));
}

/** One record to chain from its bytes as its publisher sent them. */
function recordToChain(
  data: Uint8Array,
  redact: (value: unknown) => unknown,
  storedMs: number,
  streamSeq: number,
): ReceivedRecord {
  const record = fromBinary(AuditRecordSchema, data);
  const changes: RecordChanges = { id: false, time: !record.time, arguments: false };
  // A legacy record without an id keeps one of its own (records of a call are keyed by it).
  if (!record.id && !ofCall(record)) {
    record.id = `audit-seq-${streamSeq}`;
    changes.id = true;
  }
  if (record.arguments) {
    const redacted = redact(record.arguments) as JsonObject;
    changes.arguments = !sameJson(record.arguments, redacted);
    record.arguments = redacted;
  }
  record.time ??= timestampFromMs(storedMs);
  record.sequence = 0n;
  record.prevHash = "";
  record.hash = "";
  record.chainVersion = CHAIN_VERSION;
  return { record, body: withChainVersion(recordBody(data, record, changes)) };
}

/** One row of the query index: the columns QueryRecords filters on, and the stored bytes. */
export interface IndexRow {
  /** The record's chain sequence: the row key and the page position. */
  seq: number;
  /** The log stream sequence of the message (block) that holds it: what retention drops. */
  blockSeq: number;
  /** Its place among the block's records, from 0: how a query finds it in the block. */
  pos: number;
  timeMs: number;
  agentId: string;
  userId: string;
  tool: string;
  status: number;
  traceId: string;
  callId: string;
  recordId: string;
  /** Its chain hash: the index checkpoint keeps the last one. */
  hash: string;
  /** True when it holds its call's start: a start record, or a start and end chained as one. */
  starts: boolean;
  /** A start record opens its call until its end record closes it (the sweeper's view). */
  opens?: { instance: string; deadlineMs: number };
  closes?: boolean;
  /**
   * The record as stored in the log stream: compared with what is read back, never kept in the
   * index (queries read records from the log).
   */
  data: Uint8Array;
}

/** The index row of a chained record stored in the log message at `blockSeq`. */
export function indexRow(
  record: AuditRecord,
  blockSeq: number,
  pos: number,
  data: Uint8Array,
  storedNanos: number,
): IndexRow {
  return {
    seq: Number(record.sequence),
    blockSeq,
    pos,
    timeMs: record.time ? timestampMs(record.time) : Math.floor(storedNanos / 1e6),
    agentId: record.agentId,
    userId: record.userId,
    tool: record.tool,
    status: record.status,
    traceId: record.traceId,
    callId: record.callId,
    recordId: recordKey(record),
    starts: startsCall(record),
    hash: record.hash,
    data,
    ...(record.action === AuditAction.TOOL_START
      ? {
          opens: {
            instance: record.instance,
            deadlineMs: record.deadline ? timestampMs(record.deadline) : 0,
          },
        }
      : {}),
    ...(record.action === AuditAction.TOOL_CALL ? { closes: true } : {}),
  };
}
