import { createHash } from "node:crypto";
import { BLOCK_RECORDS_TAG } from "@toolmesh/archive";
import { pooledBytes, varint } from "./record-encoding.js";

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
    out[at++] = BLOCK_RECORDS_TAG;
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
