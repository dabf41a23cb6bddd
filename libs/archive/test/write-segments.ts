// Writes segments into the directory named by argv[2] until killed: the child a crash test kills
// at a random moment, mid-write, mid-fsync or mid-rename.
import { SegmentWriter } from "../src/segment-writer.js";
import { chainedBlocks } from "./blocks.js";

const dir = process.argv[2] as string;
let head = { sequence: 0n, hash: "" };
let fromSeq = 1;
process.stdout.write("writing\n");
for (;;) {
  const part = chainedBlocks(200, 4, { fromSeq, head });
  const writer = await SegmentWriter.open(dir, {
    stream: "TOOLMESH_AUDIT_LOG",
    streamCreated: "2026-01-01T00:00:00Z",
    frameBytes: 16 * 1024,
  });
  for (const block of part.blocks) await writer.add(block);
  await writer.seal();
  head = part.head;
  fromSeq += part.blocks.length;
}
