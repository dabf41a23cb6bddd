import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  AuditAction,
  AuditLogBlockSchema,
  type AuditRecord,
  AuditRecordSchema,
  CallStatus,
} from "@toolmesh/proto";
import { BLOCK_TYPE } from "@toolmesh/records";
import { type ChainHead, chainedAfter } from "../src/hash-chain.js";
import type { ArchivedBlock } from "../src/segment-format.js";

/** The i-th record of a test log, before chaining. */
export function testRecord(i: number): AuditRecord {
  return create(AuditRecordSchema, {
    id: `rec-${i}`,
    time: timestampFromMs(1_700_000_000_000 + i * 1000),
    action: AuditAction.TOOL_CALL,
    tool: i % 2 ? "data.query" : "files.read",
    agentId: `agent-${i % 5}`,
    callId: `call-${i}`,
    traceId: (i + 1).toString(16).padStart(32, "0"),
    arguments: { query: `select ${i} from t where x = ${i * 7}` },
    status: CallStatus.SUCCESS,
    durationMs: i % 13,
    attempts: 1,
    source: "test",
  });
}

/**
 * A chained log of `count` blocks of `perBlock` records each, stream sequences from `fromSeq`,
 * as the log stream would hand them to the archive; returns the blocks and the chain's head.
 */
export function chainedBlocks(
  count: number,
  perBlock: number,
  options: { fromSeq?: number; head?: ChainHead } = {},
): { blocks: ArchivedBlock[]; head: ChainHead } {
  let head = options.head ?? { sequence: 0n, hash: "" };
  const blocks: ArchivedBlock[] = [];
  const fromSeq = options.fromSeq ?? 1;
  for (let b = 0; b < count; b++) {
    const records: AuditRecord[] = [];
    for (let r = 0; r < perBlock; r++) {
      const record = chainedAfter(testRecord(Number(head.sequence)), head);
      head = { sequence: record.sequence, hash: record.hash };
      records.push(record);
    }
    blocks.push({
      seq: fromSeq + b,
      timeNanos: BigInt(1_700_000_000_000 + b) * 1_000_000n,
      subject: "toolmesh.auditlog.block",
      type: BLOCK_TYPE,
      msgId: `audit-block-${fromSeq + b}`,
      headerBytes: 120,
      data: toBinary(AuditLogBlockSchema, create(AuditLogBlockSchema, { records })),
    });
  }
  return { blocks, head };
}
