import { create, toBinary } from "@bufbuild/protobuf";
import { TYPE_HEADER } from "@toolmesh/nats";
import { AuditLogBlockSchema, AuditRecordSchema } from "@toolmesh/proto";
import { BLOCK_TYPE, LogMessageError, readLogMessage, recordBytes } from "@toolmesh/records";
import { headers as natsHeaders } from "nats";
import { describe, expect, it } from "vitest";
import { logReadBatch } from "../src/audit-log.js";
import { blockEntrySize, blockMsgId, encodeBlock, planBlocks } from "../src/log-block.js";
import { historyRecord } from "./fixtures.js";

const typed = (type: string) => {
  const h = natsHeaders();
  h.set(TYPE_HEADER, type);
  return h;
};

describe("audit log blocks", () => {
  const records = [0, 1, 2].map((i) => historyRecord(i, 1_700_000_000_000));
  const encoded = records.map((r) => toBinary(AuditRecordSchema, r));

  it("encodes a block as AuditLogBlock does, from records already encoded", () => {
    const block = encodeBlock(encoded);
    expect(block).toEqual(toBinary(AuditLogBlockSchema, create(AuditLogBlockSchema, { records })));
    expect(block.length).toBe(encoded.reduce((n, d) => n + blockEntrySize(d.length), 0));
    const read = readLogMessage(typed(BLOCK_TYPE), block);
    expect(read.map((r) => r.record)).toEqual(records);
    expect(read.map((r) => r.data)).toEqual(encoded);
  });

  it("reads a message typed AuditRecord, or untyped, as a block of one", () => {
    const one = encoded[1] as Uint8Array;
    expect(recordBytes(typed(AuditRecordSchema.typeName), one)).toEqual([one]);
    expect(recordBytes(undefined, one)).toEqual([one]);
    expect(readLogMessage(typed(AuditRecordSchema.typeName), one)[0]?.record.id).toBe("hist-1");
  });

  it("refuses a malformed block", () => {
    const block = encodeBlock(encoded);
    expect(() => recordBytes(typed(BLOCK_TYPE), block.subarray(0, block.length - 3))).toThrow(
      LogMessageError,
    );
  });

  it("splits a batch by encoded size; a record larger than a block still gets one", () => {
    expect(planBlocks([100, 100, 100], 1000)).toEqual([3]);
    const entry = blockEntrySize(100);
    expect(planBlocks([100, 100, 100, 100, 100], 2 * entry)).toEqual([2, 2, 1]);
    expect(planBlocks([100, 5000, 100], 2 * entry)).toEqual([1, 1, 1]);
    expect(planBlocks([], 1000)).toEqual([]);
  });

  it("derives a block's message id from its records' ids", () => {
    expect(blockMsgId(["a", "b"])).toBe(blockMsgId(["a", "b"]));
    expect(blockMsgId(["a", "b"])).not.toBe(blockMsgId(["b", "a"]));
    expect(blockMsgId(["a\nb"])).not.toBe(blockMsgId(["a", "b"]));
    expect(blockMsgId(["ab"])).not.toBe(blockMsgId(["a", "b"]));
  });

  it("reads a log about 8 MiB at a time: one-record messages by the thousand, blocks by the dozen", () => {
    expect(logReadBatch({ messages: 1_000_000, bytes: 300_000_000 }, 4000)).toBe(4000);
    expect(logReadBatch({ messages: 2000, bytes: 2000 * 230_000 }, 4000)).toBe(36);
    expect(logReadBatch({ messages: 10, bytes: 10 * 1_000_000 }, 4000)).toBe(16);
    expect(logReadBatch({ messages: 0, bytes: 0 }, 4000)).toBe(32);
  });
});
