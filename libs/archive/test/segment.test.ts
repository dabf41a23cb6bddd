import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AuditLogBlockSchema } from "@toolmesh/proto";
import { readLogMessage } from "@toolmesh/records";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ArchiveReader, listSegments } from "../src/archive-dir.js";
import { verifyArchive } from "../src/archive-verifier.js";
import { recordHash } from "../src/hash-chain.js";
import { type ArchivedBlock, blockHeaders, storedSize } from "../src/segment-format.js";
import { SegmentReader } from "../src/segment-reader.js";
import { SegmentWriter } from "../src/segment-writer.js";
import { chainedBlocks } from "./blocks.js";

const STREAM = { stream: "TOOLMESH_AUDIT_LOG", streamCreated: "2026-01-01T00:00:00Z" };

async function seal(dir: string, blocks: ArchivedBlock[], frameBytes = 4096) {
  const writer = await SegmentWriter.open(dir, { ...STREAM, frameBytes });
  for (const block of blocks) await writer.add(block);
  return writer.seal();
}

describe("archive segments", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-archive-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps every block exactly, finds one by stream sequence, and names its chain ends", async () => {
    const { blocks, head } = chainedBlocks(40, 3, { fromSeq: 11 });
    const { file, footer } = await seal(dir, blocks);
    expect(path.basename(file)).toBe("audit-00000000000000000011-00000000000000000050.seg");
    expect(footer).toMatchObject({
      firstStreamSeq: 11,
      lastStreamSeq: 50,
      firstSequence: "1",
      lastSequence: "120",
      firstPrevHash: "",
      lastHash: head.hash,
      blocks: 40,
      records: 120,
      storedBytes: blocks.reduce((n, b) => n + storedSize(b), 0),
    });
    // Small frames: a block is read by decompressing one of several.
    expect(footer.frames.length).toBeGreaterThan(3);
    const reader = await SegmentReader.open(file);
    expect(await reader.checksumMatches()).toBe(true);
    expect(await reader.block(37)).toEqual(blocks[26]);
    expect(await reader.block(10)).toBeUndefined();
    expect(await reader.block(51)).toBeUndefined();
    const all: ArchivedBlock[] = [];
    for await (const block of reader.blocks()) all.push(block);
    expect(all).toEqual(blocks);
    const records = readLogMessage(blockHeaders(all[0] as ArchivedBlock), all[0]?.data ?? []);
    expect(records.map((r) => r.record.sequence)).toEqual([1n, 2n, 3n]);
    await reader.close();
    // Nothing but the sealed segment is left in the directory.
    expect(await readdir(dir)).toEqual([path.basename(file)]);
  });

  it("reads across segments and finds a block in whichever holds it", async () => {
    const first = chainedBlocks(10, 2);
    const second = chainedBlocks(10, 2, { fromSeq: 11, head: first.head });
    await seal(dir, first.blocks);
    await seal(dir, second.blocks);
    const archive = new ArchiveReader(dir);
    expect((await archive.list()).map((s) => [s.firstStreamSeq, s.lastStreamSeq])).toEqual([
      [1, 10],
      [11, 20],
    ]);
    expect((await archive.block(15))?.seq).toBe(15);
    const seqs: number[] = [];
    for await (const block of archive.blocks(8, 13)) seqs.push(block.seq);
    expect(seqs).toEqual([8, 9, 10, 11, 12, 13]);
    await archive.close();
    const verdict = await verifyArchive(dir);
    expect(verdict).toMatchObject({
      ok: true,
      recordsChecked: 40,
      firstSequence: 1n,
      lastSequence: 40n,
      missing: [],
    });
  });

  it("names a segment whose bytes changed, a missing one, and the first broken record", async () => {
    let head = { sequence: 0n, hash: "" };
    const files: string[] = [];
    for (let s = 0; s < 4; s++) {
      const part = chainedBlocks(10, 2, { fromSeq: s * 10 + 1, head });
      head = part.head;
      files.push((await seal(dir, part.blocks)).file);
    }
    expect((await verifyArchive(dir)).ok).toBe(true);

    // One byte flipped in the second segment's frames.
    const flipped = files[1] as string;
    const bytes = await readFile(flipped);
    bytes[200] = (bytes[200] as number) ^ 0xff;
    await writeFile(flipped, bytes);
    // The fourth segment is gone.
    await rm(files[3] as string);
    // The third is rewritten with one record altered, and sealed again with a good checksum.
    const reader = await SegmentReader.open(files[2] as string);
    const blocks: ArchivedBlock[] = [];
    for await (const block of reader.blocks()) blocks.push(block);
    await reader.close();
    const target = blocks[4] as ArchivedBlock;
    const block = fromBinary(AuditLogBlockSchema, target.data);
    const altered = block.records[1];
    if (!altered) throw new Error("test block has no second record");
    altered.agentId = "someone-else";
    target.data = toBinary(AuditLogBlockSchema, create(AuditLogBlockSchema, block));
    await rm(files[2] as string);
    await seal(dir, blocks);
    // A segment after a gap: the fourth's successor.
    await seal(dir, chainedBlocks(5, 2, { fromSeq: 41, head }).blocks);

    const verdict = await verifyArchive(dir);
    expect(verdict.ok).toBe(false);
    const problems = Object.fromEntries(verdict.segments.map((s) => [s.name, s.problems]));
    expect(problems[path.basename(files[0] as string)]).toEqual([]);
    expect(problems[path.basename(flipped)]?.join("\n")).toMatch(/checksum does not match/);
    expect(problems[path.basename(files[2] as string)]?.join("\n")).toMatch(
      /record 50 \(block 25\): record 50 was altered/,
    );
    expect(verdict.missing).toEqual([
      {
        fromStreamSeq: 31,
        toStreamSeq: 40,
        after: path.basename(files[2] as string),
        before: "audit-00000000000000000041-00000000000000000045.seg",
      },
    ]);
    // The first break is in the flipped segment.
    expect(verdict.firstBreak).toMatchObject({
      segment: path.basename(flipped),
      kind: "damaged",
    });
    expect(recordHash(altered)).not.toBe(altered.hash);
  });

  it("refuses what is not a sealed segment, and an empty directory does not verify", async () => {
    await writeFile(path.join(dir, "audit-00000000000000000001-00000000000000000002.seg"), "hello");
    await expect(
      SegmentReader.open(path.join(dir, "audit-00000000000000000001-00000000000000000002.seg")),
    ).rejects.toMatchObject({ name: "SegmentError", code: "truncated" });
    const verdict = await verifyArchive(dir);
    expect(verdict.ok).toBe(false);
    expect(verdict.segments[0]?.problems[0]).toMatch(/cannot be read/);
    const empty = await mkdtemp(path.join(tmpdir(), "toolmesh-archive-empty-"));
    expect((await verifyArchive(empty)).ok).toBe(false);
    await rm(empty, { recursive: true });
    expect(await listSegments(path.join(dir, "nowhere"))).toEqual([]);
  });
});
