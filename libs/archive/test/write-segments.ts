// Writes segments into the directory named by argv[2] until killed: the child a crash test kills
// at a random moment, mid-write, mid-fsync or mid-rename. With argv[3] `mid-segment` it stops
// halfway through its second segment and says so, for a kill that lands inside a segment
// whatever the machine's load.
import { SegmentWriter } from "../src/segment-writer.js";
import { chainedBlocks } from "./blocks.js";

const dir = process.argv[2] as string;
const stopMidSegment = process.argv[3] === "mid-segment";
let written = 0;
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
  for (const [i, block] of part.blocks.entries()) {
    await writer.add(block);
    if (stopMidSegment && written === 1 && i === part.blocks.length / 2) {
      process.stdout.write("mid-segment\n");
      await new Promise(() => {});
    }
  }
  await writer.seal();
  written++;
  head = part.head;
  fromSeq += part.blocks.length;
}
