import { createHash } from "node:crypto";
import { create, toJson } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { canonicalJson } from "@toolmesh/schema";

/**
 * The chain-hash rule of the audit log, in one place for the Audit service, the archive's
 * verifier and the CLI: how a record is hashed (recordHash), chained (chainedAfter) and checked
 * (ChainChecker, verifyRecords).
 */

/**
 * The chain hash of a record: SHA-256 hex of the canonical Protobuf JSON of the record with
 * `hash` empty. sequence and prev_hash are inside, so a record cannot move or be dropped unseen.
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
   * stored, is for hash versions computed over them.
   */
  check(record: AuditRecord, _data?: Uint8Array): ChainBreak | undefined {
    this.checked++;
    const computed = recordHash(record);
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
