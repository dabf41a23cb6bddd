import { TYPE_HEADER } from "@toolmesh/nats";
import { AuditLogBlockSchema } from "@toolmesh/proto";
import type { MsgHdrs } from "nats";
import { recordSlices } from "./batch.js";

/** The type header of an audit log message that is a block; any other holds one record. */
export const BLOCK_TYPE = AuditLogBlockSchema.typeName;

/** Raised when an audit log message is neither a block nor a record. */
export class LogMessageError extends Error {
  override name = "LogMessageError";
}

/** True when an audit log message with this type header is a block (else it holds one record). */
export function isBlock(headers: MsgHdrs | undefined): boolean {
  return headers?.get(TYPE_HEADER) === BLOCK_TYPE;
}

/**
 * The encoded records of an audit log message, in order, without decoding them: slices of a
 * block, or the message itself when it holds one record (the messages written before blocks, or
 * any message whose type header does not name a block). Every reader of the log — Audit's chain
 * and index, Callback, memory-writer — reads its messages through this.
 */
export function recordBytes(headers: MsgHdrs | undefined, data: Uint8Array): Uint8Array[] {
  if (!isBlock(headers)) return [data];
  try {
    return recordSlices(data);
  } catch (error) {
    throw new LogMessageError(`malformed audit log block: ${String(error)}`, { cause: error });
  }
}
