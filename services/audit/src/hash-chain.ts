import { createHash } from "node:crypto";
import { create, toJson } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { pooledBytes } from "@toolmesh/records";
import { canonicalJson } from "@toolmesh/schema";
import { withoutChainFields } from "./record-encoding.js";

/**
 * The chain hash version Audit writes: 2, SHA-256 hex of `<sequence>\n<prev_hash>\n` followed by
 * the record's stored bytes without fields 18 to 20 (sequence, prev_hash, hash). Version 1 (and
 * 0, the records written before versions) hashed the canonical Protobuf JSON of the record, which
 * cost about a tenth of Audit's CPU per record; both verify.
 */
export const CHAIN_VERSION = 2;

/** `chain_version` (field 30, varint) = 2, as bytes: tag 0xF0 0x01, value 0x02. */
const CHAIN_VERSION_FIELD = new Uint8Array([0xf0, 0x01, CHAIN_VERSION]);

/** A record's body (its bytes without chain fields) with `chain_version` set, for hashing. */
export function withChainVersion(body: Uint8Array): Uint8Array {
  const out = pooledBytes(body.length + CHAIN_VERSION_FIELD.length);
  out.set(body);
  out.set(CHAIN_VERSION_FIELD, body.length);
  return out;
}

/** The version-2 hash of a record at `sequence` after `prevHash`, from its body. */
export function recordHashV2(sequence: bigint, prevHash: string, body: Uint8Array): string {
  return createHash("sha256").update(`${sequence}\n${prevHash}\n`).update(body).digest("hex");
}

/**
 * The hash a stored record must have: version 2 from its stored bytes (`data`), version 0 or 1
 * from its canonical JSON.
 */
export function expectedHash(record: AuditRecord, data: Uint8Array): string {
  if (record.chainVersion >= 2)
    return recordHashV2(record.sequence, record.prevHash, withoutChainFields(data));
  return recordHash(record);
}

/**
 * The version-1 chain hash of a record: SHA-256 hex of the canonical Protobuf JSON of the record
 * with `hash` empty. sequence and prev_hash are inside, so a record cannot move or be dropped unseen.
 */
export function recordHash(record: AuditRecord): string {
  const unhashed = record.hash === "" ? record : create(AuditRecordSchema, { ...record, hash: "" });
  const json = toJson(AuditRecordSchema, unhashed);
  return createHash("sha256").update(canonicalJson(json)).digest("hex");
}

/** The end of a chain: where the next record goes. */
export interface ChainHead {
  sequence: bigint;
  hash: string;
}

/** The record as stored after `head`: the next sequence, pointing at the head, hashed. */
export function chainedAfter(record: AuditRecord, head: ChainHead): AuditRecord {
  const stored = create(AuditRecordSchema, {
    ...record,
    sequence: head.sequence + 1n,
    prevHash: head.hash,
    hash: "",
  });
  stored.hash = recordHash(stored);
  return stored;
}

/** The first break in a run of records, or undefined when every link holds. */
export interface ChainBreak {
  /** altered: its own hash fails; missing: records before it are absent; repointed: wrong link. */
  kind: "altered" | "missing" | "repointed";
  sequence: bigint;
  expectedHash: string;
  actualHash: string;
  reason: string;
}

/**
 * Checks records one at a time, in chain order: each record's own hash, and that it points at
 * the record before it. The first record checked is trusted for its prev_hash (older records may
 * have been dropped by retention).
 */
export class ChainChecker {
  checked = 0;
  private previous: AuditRecord | undefined;

  /** The break this record (with its stored bytes) makes, or undefined when the link holds. */
  check(record: AuditRecord, data: Uint8Array): ChainBreak | undefined {
    this.checked++;
    const computed = expectedHash(record, data);
    if (computed !== record.hash) {
      return {
        kind: "altered",
        sequence: record.sequence,
        expectedHash: computed,
        actualHash: record.hash,
        reason: `record ${record.sequence} was altered: its content does not match its hash`,
      };
    }
    const previous = this.previous;
    this.previous = record;
    if (!previous) return undefined;
    if (record.sequence !== previous.sequence + 1n) {
      return {
        kind: "missing",
        sequence: record.sequence,
        expectedHash: previous.hash,
        actualHash: record.prevHash,
        reason: `records ${previous.sequence + 1n} to ${record.sequence - 1n} are missing`,
      };
    }
    if (record.prevHash !== previous.hash) {
      return {
        kind: "repointed",
        sequence: record.sequence,
        expectedHash: previous.hash,
        actualHash: record.prevHash,
        reason: `record ${record.sequence} does not point at record ${previous.sequence}`,
      };
    }
    return undefined;
  }
}

/** The first break in a run of records, or undefined when every link holds. */
export function findChainBreak(records: Iterable<{ record: AuditRecord; data: Uint8Array }>): {
  checked: number;
  break?: ChainBreak;
} {
  const checker = new ChainChecker();
  for (const { record, data } of records) {
    const found = checker.check(record, data);
    if (found) return { checked: checker.checked, break: found };
  }
  return { checked: checker.checked };
}
