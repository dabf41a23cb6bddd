import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { decodeEvent } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import type { JsMsg } from "nats";
import { type RecordChanges, recordBody, sameJson } from "./record-encoding.js";

/** A record to chain, and its encoding without the chain fields. */
export interface ReceivedRecord {
  record: AuditRecord;
  body: Uint8Array;
}

/**
 * The record to chain from one message of the audit input stream: decoded, given an id and a
 * time when the publisher left them out, arguments redacted. The only place that knows what
 * publishers send, so a change in what the Dispatcher publishes per call is adapted here.
 * Throws when the message is not an audit record.
 */
export function recordToChain(msg: JsMsg, redact: (value: unknown) => unknown): ReceivedRecord {
  const record = decodeEvent(AuditRecordSchema, msg);
  const changes: RecordChanges = { id: !record.id, time: !record.time, arguments: false };
  record.id ||= `audit-seq-${msg.seq}`;
  if (record.arguments) {
    const redacted = redact(record.arguments) as JsonObject;
    changes.arguments = !sameJson(record.arguments, redacted);
    record.arguments = redacted;
  }
  record.time ??= timestampFromMs(Math.floor(msg.info.timestampNanos / 1e6));
  record.sequence = 0n;
  record.prevHash = "";
  record.hash = "";
  return { record, body: recordBody(msg.data, record, changes) };
}

/** One row of the query index: the columns QueryRecords filters on, and the stored bytes. */
export interface IndexRow {
  /** The record's chain sequence: the row key and the page position. */
  seq: number;
  /** The log stream sequence of the message (block) that holds it: what retention drops. */
  blockSeq: number;
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
  /** The record as stored in the log stream, returned by queries without re-encoding. */
  data: Uint8Array;
}

/** The index row of a chained record stored in the log message at `blockSeq`. */
export function indexRow(
  record: AuditRecord,
  blockSeq: number,
  data: Uint8Array,
  storedNanos: number,
): IndexRow {
  return {
    seq: Number(record.sequence),
    blockSeq,
    timeMs: record.time ? timestampMs(record.time) : Math.floor(storedNanos / 1e6),
    agentId: record.agentId,
    userId: record.userId,
    tool: record.tool,
    status: record.status,
    traceId: record.traceId,
    callId: record.callId,
    recordId: record.id,
    hash: record.hash,
    data,
  };
}
