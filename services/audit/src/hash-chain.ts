import { createHash } from "node:crypto";
import { create, toJson } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { canonicalJson } from "@toolmesh/schema";

/**
 * The chain hash of a record: SHA-256 hex of the canonical Protobuf JSON of the record with
 * `hash` empty. sequence and prev_hash are inside, so a record cannot move or be dropped unseen.
 */
export function recordHash(record: AuditRecord): string {
  const json = toJson(AuditRecordSchema, create(AuditRecordSchema, { ...record, hash: "" }));
  return createHash("sha256").update(canonicalJson(json)).digest("hex");
}

/** The first break in a run of records, or undefined when every link holds. */
export interface ChainBreak {
  sequence: bigint;
  expectedHash: string;
  actualHash: string;
  reason: string;
}

/**
 * Checks each record's own hash and that it points at the record before it. The first record
 * checked is trusted for its prev_hash (older records may have expired by retention).
 */
export function findChainBreak(records: Iterable<AuditRecord>): {
  checked: number;
  break?: ChainBreak;
} {
  let checked = 0;
  let previous: AuditRecord | undefined;
  for (const record of records) {
    checked++;
    const computed = recordHash(record);
    if (computed !== record.hash) {
      return {
        checked,
        break: {
          sequence: record.sequence,
          expectedHash: computed,
          actualHash: record.hash,
          reason: `record ${record.sequence} was altered: its content does not match its hash`,
        },
      };
    }
    if (previous) {
      if (record.sequence !== previous.sequence + 1n) {
        return {
          checked,
          break: {
            sequence: record.sequence,
            expectedHash: previous.hash,
            actualHash: record.prevHash,
            reason: `records ${previous.sequence + 1n} to ${record.sequence - 1n} are missing`,
          },
        };
      }
      if (record.prevHash !== previous.hash) {
        return {
          checked,
          break: {
            sequence: record.sequence,
            expectedHash: previous.hash,
            actualHash: record.prevHash,
            reason: `record ${record.sequence} does not point at record ${previous.sequence}`,
          },
        };
      }
    }
    previous = record;
  }
  return { checked };
}
