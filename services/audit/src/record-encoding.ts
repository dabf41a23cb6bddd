import { create, toBinary } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import {
  CHAIN_VERSION_FIELD,
  HASH_FIELD,
  PREV_HASH_FIELD,
  pooledBytes,
  SEQUENCE_FIELD,
  varint,
  withoutFields,
} from "@toolmesh/records";

/** AuditRecord's arguments: cut out of the sent bytes when redaction changed them. */
const ARGUMENTS = 10;
/** The chain fields' tags (field number << 3 | wire type) as varints: 18 varint, 19 and 20 length-delimited. */
const SEQUENCE_TAG = [0x90, 0x01];
const PREV_HASH_TAG = [0x9a, 0x01];
const HASH_TAG = [0xa2, 0x01];
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** The chain fields, chain_version included: Audit sets them; a publisher's own are cut out. */
const CHAIN_FIELDS = new Set([SEQUENCE_FIELD, PREV_HASH_FIELD, HASH_FIELD, CHAIN_VERSION_FIELD]);
const CHAIN_AND_ARGUMENTS = new Set([ARGUMENTS, ...CHAIN_FIELDS]);

/** What the recorder changed in a record it received, so its bytes must say it too. */
export interface RecordChanges {
  /** The publisher left the id out. */
  id: boolean;
  /** The publisher left the time out. */
  time: boolean;
  /** Redaction hid something in the arguments. */
  arguments: boolean;
}

/**
 * The encoding of a record without its chain fields, made from the bytes its publisher sent
 * rather than by encoding the whole record again (protobuf-es's toBinary measured as a tenth of
 * Audit's CPU per record). Fields the recorder changed are appended; the arguments, when
 * redaction changed them, are cut out of the sent bytes first, so no hidden secret stays in the
 * stored bytes; chain fields a publisher set are cut out too. Decodes to the same record.
 */
export function recordBody(
  sent: Uint8Array,
  record: AuditRecord,
  changes: RecordChanges,
): Uint8Array {
  const kept = withoutFields(sent, changes.arguments ? CHAIN_AND_ARGUMENTS : CHAIN_FIELDS);
  if (!changes.id && !changes.time && !changes.arguments) return kept;
  // Only the changed fields are set, so this encodes exactly those fields.
  const patch = toBinary(
    AuditRecordSchema,
    create(AuditRecordSchema, {
      id: changes.id ? record.id : "",
      time: changes.time ? record.time : undefined,
      arguments: changes.arguments ? record.arguments : undefined,
    }),
  );
  const out = pooledBytes(kept.length + patch.length);
  out.set(kept);
  out.set(patch, kept.length);
  return out;
}

/**
 * The stored bytes of a chained record: its body, then its sequence, prev_hash and hash, written
 * by hand into one pooled buffer (protobuf-es's BinaryWriter, or toBinary of the whole record,
 * took several microseconds a record, much of it allocating typed arrays). Zero values are left
 * out, as proto3 encoding leaves them out.
 */
export function chainedRecordBytes(body: Uint8Array, record: AuditRecord): Uint8Array {
  const sequence = record.sequence !== 0n ? varint64(record.sequence) : [];
  const texts = [
    { tag: PREV_HASH_TAG, text: record.prevHash, length: Buffer.byteLength(record.prevHash) },
    { tag: HASH_TAG, text: record.hash, length: Buffer.byteLength(record.hash) },
  ].map((t) => ({ ...t, prefix: t.length > 0 ? [...t.tag, ...varint(t.length)] : [] }));
  let size = body.length;
  if (sequence.length > 0) size += SEQUENCE_TAG.length + sequence.length;
  for (const t of texts) size += t.prefix.length + t.length;
  // Every byte is written below, so the pool's uninitialised memory never shows.
  const out = Buffer.allocUnsafe(size);
  out.set(body);
  let at = body.length;
  if (sequence.length > 0) {
    out.set(SEQUENCE_TAG, at);
    out.set(sequence, at + SEQUENCE_TAG.length);
    at += SEQUENCE_TAG.length + sequence.length;
  }
  for (const t of texts) {
    if (t.length === 0) continue;
    out.set(t.prefix, at);
    at += t.prefix.length;
    at += out.write(t.text, at, "utf8");
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** The base-128 varint of an unsigned 64-bit value. */
function varint64(value: bigint): number[] {
  if (value >= 0n && value <= MAX_SAFE) return varint(Number(value));
  const out: number[] = [];
  let rest = BigInt.asUintN(64, value);
  while (rest >= 0x80n) {
    out.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  out.push(Number(rest));
  return out;
}

/** True when two JSON values are equal; false whenever in doubt (NaN), so the caller re-encodes. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => sameJson(item, b[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every(
    (key) =>
      Object.hasOwn(b, key) &&
      sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}
