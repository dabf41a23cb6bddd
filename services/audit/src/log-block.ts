import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { TYPE_HEADER } from "@toolmesh/nats";
import { AuditLogBlockSchema, type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import type { MsgHdrs } from "nats";
import { pooledBytes, varint } from "./record-encoding.js";

/** The type header of a log message that is a block; any other is one record. */
export const BLOCK_TYPE = AuditLogBlockSchema.typeName;

/** `AuditLogBlock.records`: field 1, length-delimited, and its tag. */
const RECORDS_FIELD = 1;
const RECORDS_TAG = (RECORDS_FIELD << 3) | WireType.LengthDelimited;

/** Raised when a log message is neither a block nor a record. */
export class LogMessageError extends Error {
  override name = "LogMessageError";
}

/** One record of a log message, with its own encoded bytes (a slice of the message). */
export interface LoggedRecord {
  record: AuditRecord;
  data: Uint8Array;
}

/** The bytes a block of these encoded records takes: each is a tag, a length and the record. */
export function blockEntrySize(recordBytes: number): number {
  return 1 + varint(recordBytes).length + recordBytes;
}

/**
 * Encodes an AuditLogBlock from records already encoded, without encoding them again: the same
 * bytes as toBinary(AuditLogBlockSchema, ...) of the decoded records.
 */
export function encodeBlock(records: readonly Uint8Array[]): Uint8Array {
  const out = pooledBytes(records.reduce((n, data) => n + blockEntrySize(data.length), 0));
  let at = 0;
  for (const data of records) {
    out[at++] = RECORDS_TAG;
    const length = varint(data.length);
    out.set(length, at);
    at += length.length;
    out.set(data, at);
    at += data.length;
  }
  return out;
}

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

/** True when a log message with this type header is a block (else it holds one record). */
export function isBlock(headers: MsgHdrs | undefined): boolean {
  return headers?.get(TYPE_HEADER) === BLOCK_TYPE;
}

/**
 * The encoded records of a log message, in order, without decoding them: slices of a block, or
 * the message itself when it holds one record (the messages written before blocks, or any
 * message whose type header does not name a block).
 */
export function recordBytes(headers: MsgHdrs | undefined, data: Uint8Array): Uint8Array[] {
  if (!isBlock(headers)) return [data];
  const reader = new BinaryReader(data);
  const out: Uint8Array[] = [];
  try {
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === RECORDS_FIELD && wireType === WireType.LengthDelimited)
        out.push(reader.bytes());
      else reader.skip(wireType, field);
    }
  } catch (error) {
    throw new LogMessageError(`malformed audit log block: ${String(error)}`, { cause: error });
  }
  return out;
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
