import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/**
 * `RecordBatch.records` and `AuditLogBlock.records`: field 1, length-delimited. A record batch
 * (the record stream) and a log block (the audit log) are the same bytes on the wire, so records
 * move from one to the other without being encoded again.
 */
const RECORDS_FIELD = 1;
const RECORDS_TAG = (RECORDS_FIELD << 3) | WireType.LengthDelimited;

/** Raised when a batch or block is not a sequence of records. */
export class RecordBatchError extends Error {
  override name = "RecordBatchError";
}

/** The base-128 varint of a non-negative safe integer (least significant group first). */
export function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

/**
 * A byte array for the caller to fill completely, from Node's buffer pool: allocating a typed
 * array of a few hundred bytes on its own costs about a microsecond in V8, a pooled one a tenth.
 */
export function pooledBytes(size: number): Uint8Array {
  const buffer = Buffer.allocUnsafe(size);
  return new Uint8Array(buffer.buffer, buffer.byteOffset, size);
}

/** The bytes one encoded record takes in a batch: a tag, its length and the record. */
export function batchEntrySize(recordBytes: number): number {
  return 1 + varint(recordBytes).length + recordBytes;
}

/**
 * Encodes a RecordBatch (or an AuditLogBlock) from records already encoded, without encoding them
 * again: the same bytes as toBinary of the decoded records.
 */
export function encodeRecords(records: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const data of records) size += batchEntrySize(data.length);
  const out = pooledBytes(size);
  let at = 0;
  for (const data of records) {
    out[at++] = RECORDS_TAG;
    for (const byte of varint(data.length)) out[at++] = byte;
    out.set(data, at);
    at += data.length;
  }
  return out;
}

/** The encoded records of a batch or block, in order, as slices of it, without decoding them. */
export function recordSlices(data: Uint8Array): Uint8Array[] {
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
    throw new RecordBatchError(`malformed record batch: ${String(error)}`, { cause: error });
  }
  return out;
}
