import { createHash } from "node:crypto";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { pooledBytes, withoutChainFields } from "@toolmesh/records";
import { canonicalJson } from "@toolmesh/schema";

/**
 * The chain-hash rule of the audit log, in one place for the Audit service, the archive's
 * verifier and the CLI: how a record is hashed (recordHashV2, and recordHash for the records
 * written before version 2), chained (chainedAfter) and checked (ChainChecker, verifyRecords).
 */

/**
 * The chain hash version Audit writes: 2, SHA-256 hex of `<sequence>\n<prev_hash>\n` followed by
 * the record's stored bytes without fields 18 to 20 (sequence, prev_hash, hash). Version 1 (and
 * 0, the records written before versions) hashed the canonical Protobuf JSON of the record, which
 * cost about a tenth of Audit's CPU per record; both verify.
 */
export const CHAIN_VERSION = 2;

/** `chain_version` (field 30, varint) = 2, as bytes: tag 0xF0 0x01, value 0x02. */
const CHAIN_VERSION_BYTES = new Uint8Array([0xf0, 0x01, CHAIN_VERSION]);

/** A record's body (its bytes without chain fields) with `chain_version` set, for hashing. */
export function withChainVersion(body: Uint8Array): Uint8Array {
  const out = pooledBytes(body.length + CHAIN_VERSION_BYTES.length);
  out.set(body);
  out.set(CHAIN_VERSION_BYTES, body.length);
  return out;
}

/** The version-2 hash of a record at `sequence` after `prevHash`, from its body. */
export function recordHashV2(sequence: bigint, prevHash: string, body: Uint8Array): string {
  return createHash("sha256").update(`${sequence}\n${prevHash}\n`).update(body).digest("hex");
}

/**
 * The hash a stored record must have: version 2 from its stored bytes (`data`; without them, from
 * the record encoded again, which gives the same bytes for a record Audit wrote), version 0 or 1
 * from its canonical JSON.
 */
export function expectedHash(record: AuditRecord, data?: Uint8Array): string {
  if (record.chainVersion < 2) return recordHash(record);
  const bytes = data ?? toBinary(AuditRecordSchema, record);
  return recordHashV2(record.sequence, record.prevHash, withoutChainFields(bytes));
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

/**
 * The record as stored after `head`: the next sequence, pointing at the head, hashed with
 * version 2 over its encoding in field order (toBinary of the result gives those bytes back).
 * Audit chains the bytes it was sent instead (block-appender.ts); this is for writing a chain
 * from records, as the archive's and the CLI's tests and the history generator do.
 */
export function chainedAfter(record: AuditRecord, head: ChainHead): AuditRecord {
  const stored = create(AuditRecordSchema, {
    ...record,
    sequence: head.sequence + 1n,
    prevHash: head.hash,
    hash: "",
    chainVersion: CHAIN_VERSION,
  });
  stored.hash = expectedHash(stored);
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

/** A record to check, with its encoded bytes as stored when the caller has them. */
export interface CheckedRecord {
  record: AuditRecord;
  data?: Uint8Array;
}

/**
 * Checks records one at a time, in chain order: each record's own hash, and that it points at
 * the record before it. The first record checked is trusted for its prev_hash (older records may
 * have been dropped by retention), unless `after` names the record before it.
 */
export class ChainChecker {
  checked = 0;
  private previous: ChainHead | undefined;

  constructor(after?: ChainHead) {
    this.previous = after;
  }

  /** The last record checked (or the head given), undefined before the first. */
  get head(): ChainHead | undefined {
    return this.previous;
  }

  /** Trusts the next record for its link: the records before it could not be read. */
  forget(): void {
    this.previous = undefined;
  }

  /**
   * The break this record makes, or undefined when the link holds. `data`, the record's bytes as
   * stored, is what a version-2 hash covers.
   */
  check(record: AuditRecord, data?: Uint8Array): ChainBreak | undefined {
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
    this.previous = { sequence: record.sequence, hash: record.hash };
    if (!previous) return undefined;
    if (record.sequence !== previous.sequence + 1n) {
      return {
        kind: "missing",
        sequence: record.sequence,
        expectedHash: previous.hash,
        actualHash: record.prevHash,
        reason:
          record.sequence > previous.sequence
            ? `records ${previous.sequence + 1n} to ${record.sequence - 1n} are missing`
            : `record ${record.sequence} follows record ${previous.sequence}: the chain runs backwards`,
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

/**
 * Verifies a run of records in chain order: how many were checked (up to and including the first
 * break) and the first break, if any. The entry point for anything that checks the chain whole.
 */
export function verifyRecords(
  records: Iterable<AuditRecord | CheckedRecord>,
  after?: ChainHead,
): { checked: number; break?: ChainBreak } {
  const checker = new ChainChecker(after);
  for (const item of records) {
    const { record, data } = "$typeName" in item ? { record: item, data: undefined } : item;
    const found = checker.check(record, data);
    if (found) return { checked: checker.checked, break: found };
  }
  return { checked: checker.checked };
}
