import { BinaryReader } from "@bufbuild/protobuf/wire";
import { pooledBytes } from "./batch.js";

/** AuditRecord fields the chain sets: sequence, prev_hash and hash (18 to 20). */
export const SEQUENCE_FIELD = 18;
export const PREV_HASH_FIELD = 19;
export const HASH_FIELD = 20;
/** `chain_version` (field 30): the hash rule a record was chained with. */
export const CHAIN_VERSION_FIELD = 30;

/** The fields a version-2 hash leaves out: the chain fields written after it. */
const HASHED_OUT: ReadonlySet<number> = new Set([SEQUENCE_FIELD, PREV_HASH_FIELD, HASH_FIELD]);

/**
 * A stored record's bytes without sequence, prev_hash and hash: what its version-2 chain hash
 * covers. Audit hashes these bytes when it chains a record and every verifier (Audit, the
 * archive's, the CLI's) hashes them again, so the rule lives here once.
 */
export function withoutChainFields(data: Uint8Array): Uint8Array {
  return withoutFields(data, HASHED_OUT);
}

/**
 * The encoded message without any occurrence of these fields, cut from its bytes (never encoded
 * again, so every other byte stays as it was); the same array when it has none.
 */
export function withoutFields(data: Uint8Array, drop: ReadonlySet<number>): Uint8Array {
  return cutFields(data, (field) => drop.has(field));
}

/** The encoded message with only these fields, cut from its bytes as withoutFields does. */
export function onlyFields(data: Uint8Array, keep: ReadonlySet<number>): Uint8Array {
  return cutFields(data, (field) => !keep.has(field));
}

function cutFields(data: Uint8Array, cut: (field: number) => boolean): Uint8Array {
  const reader = new BinaryReader(data);
  const kept: [number, number][] = [];
  let start = 0;
  let changed = false;
  while (reader.pos < reader.len) {
    const at = reader.pos;
    const [field, wireType] = reader.tag();
    reader.skip(wireType, field);
    if (!cut(field)) continue;
    if (at > start) kept.push([start, at]);
    start = reader.pos;
    changed = true;
  }
  if (!changed) return data;
  if (start < data.length) kept.push([start, data.length]);
  const out = pooledBytes(kept.reduce((n, [from, to]) => n + to - from, 0));
  let offset = 0;
  for (const [from, to] of kept) {
    out.set(data.subarray(from, to), offset);
    offset += to - from;
  }
  return out;
}
