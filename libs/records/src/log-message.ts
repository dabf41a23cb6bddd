import { fromBinary } from "@bufbuild/protobuf";
import { TYPE_HEADER } from "@toolmesh/nats";
import { AuditLogBlockSchema, type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { recordSlices } from "./batch.js";

/**
 * How a message of the audit log holds its records: a block (AuditLogBlock) or, for messages
 * written before blocks, one record. Read the same way from the log stream and from an archive
 * segment, so the headers are anything with a `get` (a nats.js MsgHdrs, or a segment's block).
 * Every reader of the log — Audit's chain, index and archive, Callback, memory-writer, the CLI's
 * verifier — reads its messages through this.
 */

/** The type header of a log message that is a block; any other is one record. */
export const BLOCK_TYPE = AuditLogBlockSchema.typeName;

/** The headers of a log message, as far as reading its records goes. */
export interface LogHeaders {
  get(name: string): string;
}

/** Raised when a log message is neither a block nor a record. */
export class LogMessageError extends Error {
  override name = "LogMessageError";
}

/** One record of a log message, with its own encoded bytes (a slice of the message). */
export interface LoggedRecord {
  record: AuditRecord;
  data: Uint8Array;
}

/** True when a log message with this type header is a block (else it holds one record). */
export function isBlock(headers: LogHeaders | undefined): boolean {
  return headers?.get(TYPE_HEADER) === BLOCK_TYPE;
}

/**
 * The encoded records of a log message, in order, without decoding them: slices of a block, or
 * the message itself when it holds one record (the messages written before blocks, or any
 * message whose type header does not name a block).
 */
export function recordBytes(headers: LogHeaders | undefined, data: Uint8Array): Uint8Array[] {
  if (!isBlock(headers)) return [data];
  try {
    // A block and a RecordBatch are the same wire format.
    return recordSlices(data);
  } catch (error) {
    throw new LogMessageError(`malformed audit log block: ${String(error)}`, { cause: error });
  }
}

/** Every record of a log message, decoded, with its bytes; throws when one does not decode. */
export function readLogMessage(headers: LogHeaders | undefined, data: Uint8Array): LoggedRecord[] {
  return recordBytes(headers, data).map((bytes) => ({
    record: fromBinary(AuditRecordSchema, bytes),
    data: bytes,
  }));
}

/** The last record of a log message, or undefined when it holds none. */
export function lastRecord(
  headers: LogHeaders | undefined,
  data: Uint8Array,
): AuditRecord | undefined {
  const last = recordBytes(headers, data).at(-1);
  return last ? fromBinary(AuditRecordSchema, last) : undefined;
}

/** The first record of a log message, or undefined when it holds none. */
export function firstRecord(
  headers: LogHeaders | undefined,
  data: Uint8Array,
): AuditRecord | undefined {
  const first = recordBytes(headers, data)[0];
  return first ? fromBinary(AuditRecordSchema, first) : undefined;
}
