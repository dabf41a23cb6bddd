import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { batchEntrySize, encodeRecords, recordBytes } from "@toolmesh/records";

// How a log message is read is shared with every reader of the log (libs/records).
export { BLOCK_TYPE, isBlock, LogMessageError, recordBytes } from "@toolmesh/records";

import type { MsgHdrs } from "nats";

/** One record of a log message, with its own encoded bytes (a slice of the message). */
export interface LoggedRecord {
  record: AuditRecord;
  data: Uint8Array;
}

/** The bytes a block of these encoded records takes: each is a tag, a length and the record. */
export const blockEntrySize = batchEntrySize;

/**
 * Encodes an AuditLogBlock from records already encoded, without encoding them again: the same
 * bytes as a RecordBatch of them (libs/records), so records move from a batch into the log as
 * they came.
 */
export const encodeBlock = encodeRecords;

/**
 * The Nats-Msg-Id of a block: derived from its records' source ids, so that appending the same
 * records again (a retry after a lost ack) is deduplicated by JetStream.
 */
export function blockMsgId(recordIds: readonly string[]): string {
  if (recordIds.length === 1) return `audit-block-1-${recordIds[0]}`;
  const hash = createHash("sha256");
  for (const id of recordIds) hash.update(id).update("\n");
  return `audit-block-${recordIds.length}-${hash.digest("base64url")}`;
}

/** Every record of a log message, decoded, with its bytes; throws when one does not decode. */
export function readLogMessage(headers: MsgHdrs | undefined, data: Uint8Array): LoggedRecord[] {
  return recordBytes(headers, data).map((bytes) => ({
    record: fromBinary(AuditRecordSchema, bytes),
    data: bytes,
  }));
}

/** The last record of a log message, or undefined when it holds none. */
export function lastRecord(
  headers: MsgHdrs | undefined,
  data: Uint8Array,
): AuditRecord | undefined {
  const all = recordBytes(headers, data);
  const last = all.at(-1);
  return last ? fromBinary(AuditRecordSchema, last) : undefined;
}

/** The first record of a log message, or undefined when it holds none. */
export function firstRecord(
  headers: MsgHdrs | undefined,
  data: Uint8Array,
): AuditRecord | undefined {
  const first = recordBytes(headers, data)[0];
  return first ? fromBinary(AuditRecordSchema, first) : undefined;
}

/**
 * How many records, in order, go into each block: as many as fit in `maxBytes` encoded, so a
 * block stays within NATS max_payload; a record too large for any block still gets one of its
 * own (JetStream then refuses it, as it refused such a record before blocks).
 */
export function planBlocks(recordSizes: readonly number[], maxBytes: number): number[] {
  const counts: number[] = [];
  let count = 0;
  let bytes = 0;
  for (const size of recordSizes) {
    const entry = blockEntrySize(size);
    if (count > 0 && bytes + entry > maxBytes) {
      counts.push(count);
      count = 0;
      bytes = 0;
    }
    count++;
    bytes += entry;
  }
  if (count > 0) counts.push(count);
  return counts;
}
