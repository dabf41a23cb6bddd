import { fromBinary } from "@bufbuild/protobuf";
import { AuditRecordSchema } from "@toolmesh/proto";
import { recordBytes } from "@toolmesh/records";
import { listSegments, type SegmentFile } from "./archive-dir.js";
import { type ChainBreak, ChainChecker } from "./hash-chain.js";
import { type ArchivedBlock, blockHeaders, SegmentError } from "./segment-format.js";
import { SegmentReader } from "./segment-reader.js";

/** What verifying one segment found; `problems` is empty when it verifies. */
export interface SegmentCheck {
  name: string;
  firstStreamSeq: number;
  lastStreamSeq: number;
  blocks: number;
  records: number;
  /** The chain sequences of its first and last record read ("" when none could be read). */
  firstSequence: string;
  lastSequence: string;
  problems: string[];
}

/** The first place the archive's history is broken. */
export interface ArchiveBreak {
  /** The segment it is in (for a missing segment, the one after the gap). */
  segment: string;
  /**
   * altered, missing, repointed: a record (ChainBreak); missing-segment: stream sequences no
   * segment holds; damaged: a segment that is not as it was sealed (checksum, frame, footer).
   */
  kind: ChainBreak["kind"] | "missing-segment" | "damaged";
  /** The first broken record's chain sequence; for a damaged segment, its first unreadable one. */
  sequence: bigint;
  expectedHash: string;
  actualHash: string;
  reason: string;
}

/** The result of verifying an archive directory. */
export interface ArchiveVerdict {
  ok: boolean;
  dir: string;
  segments: SegmentCheck[];
  recordsChecked: number;
  /** The chain sequence of the first record the archive holds (0 when none). */
  firstSequence: bigint;
  lastSequence: bigint;
  /** Stream sequences that no segment holds, between two segments. */
  missing: { fromStreamSeq: number; toStreamSeq: number; after: string; before: string }[];
  firstBreak?: ArchiveBreak;
}

/**
 * Verifies every segment of an archive directory offline: each segment's trailer, footer and
 * checksum; that segments follow each other with no stream sequence missing; every block's frame;
 * every record's hash and its link to the record before it, across blocks and segments; and that
 * each footer tells what its blocks hold. Goes on past a problem, so every damaged or missing
 * segment is named; the first break is the one to start from.
 */
export async function verifyArchive(
  dir: string,
  options: { onSegment?: (check: SegmentCheck) => void } = {},
): Promise<ArchiveVerdict> {
  const files = await listSegments(dir);
  const verdict: ArchiveVerdict = {
    ok: true,
    dir,
    segments: [],
    recordsChecked: 0,
    firstSequence: 0n,
    lastSequence: 0n,
    missing: [],
  };
  let checker = new ChainChecker();
  let previous: SegmentFile | undefined;
  let streamCreated: string | undefined;
  for (const file of files) {
    const check: SegmentCheck = {
      name: file.name,
      firstStreamSeq: file.firstStreamSeq,
      lastStreamSeq: file.lastStreamSeq,
      blocks: 0,
      records: 0,
      firstSequence: "",
      lastSequence: "",
      problems: [],
    };
    const broke = (found: Omit<ArchiveBreak, "segment">) => {
      verdict.firstBreak ??= { segment: file.name, ...found };
    };
    if (previous && file.firstStreamSeq > previous.lastStreamSeq + 1) {
      const gap = {
        fromStreamSeq: previous.lastStreamSeq + 1,
        toStreamSeq: file.firstStreamSeq - 1,
        after: previous.name,
        before: file.name,
      };
      verdict.missing.push(gap);
      const reason = `stream sequences ${gap.fromStreamSeq} to ${gap.toStreamSeq} are in no segment: a segment between ${gap.after} and ${gap.before} is missing`;
      check.problems.push(reason);
      broke(afterHead(checker, "missing-segment", reason));
      // Its records are gone; the chain is checked again from this segment's first record.
      checker = new ChainChecker();
    } else if (previous && file.firstStreamSeq <= previous.lastStreamSeq) {
      check.problems.push(`it overlaps ${previous.name}`);
    }
    previous = file;
    const read = await verifySegment(file, check, checker, broke, (created) => {
      streamCreated ??= created;
      return created === streamCreated;
    });
    verdict.recordsChecked += read.checked;
    if (read.unreadable) checker = new ChainChecker();
    if (verdict.firstSequence === 0n && check.firstSequence !== "")
      verdict.firstSequence = BigInt(check.firstSequence);
    if (check.lastSequence !== "") verdict.lastSequence = BigInt(check.lastSequence);
    verdict.segments.push(check);
    options.onSegment?.(check);
  }
  verdict.ok =
    verdict.segments.length > 0 && verdict.segments.every((s) => s.problems.length === 0);
  return verdict;
}

/** Checks one segment into `check`; returns records checked and whether some were unreadable. */
async function verifySegment(
  file: SegmentFile,
  check: SegmentCheck,
  checker: ChainChecker,
  broke: (found: Omit<ArchiveBreak, "segment">) => void,
  sameStream: (created: string) => boolean,
): Promise<{ checked: number; unreadable: boolean }> {
  const damaged = (reason: string) => {
    check.problems.push(reason);
    broke(afterHead(checker, "damaged", reason));
  };
  let reader: SegmentReader;
  try {
    reader = await SegmentReader.open(file.file);
  } catch (error) {
    damaged(`cannot be read: ${describe(error)}`);
    return { checked: 0, unreadable: true };
  }
  const before = checker.checked;
  let unreadable = false;
  try {
    const { footer } = reader;
    const segmentStart = afterHead(checker, "damaged", "");
    if (
      footer.firstStreamSeq !== file.firstStreamSeq ||
      footer.lastStreamSeq !== file.lastStreamSeq
    )
      damaged(
        `its name says blocks ${file.firstStreamSeq}–${file.lastStreamSeq}, its footer ${footer.firstStreamSeq}–${footer.lastStreamSeq}`,
      );
    if (!sameStream(footer.streamCreated))
      damaged(`it belongs to another log stream (created ${footer.streamCreated})`);
    let last: ArchivedBlock | undefined;
    let first: ArchivedBlock | undefined;
    let firstPrevHash: string | undefined;
    let lastHash = "";
    for (const [index, frame] of footer.frames.entries()) {
      let blocks: ArchivedBlock[];
      try {
        blocks = await reader.frame(index);
      } catch (error) {
        damaged(describe(error));
        unreadable = true;
        last = undefined;
        // Its records are lost to the check; the chain is taken up again after them.
        checker.forget();
        continue;
      }
      if (blocks.length !== frame.blocks || blocks[0]?.seq !== frame.firstStreamSeq)
        damaged(`frame ${index} does not hold the blocks its footer entry names`);
      for (const block of blocks) {
        if (last && block.seq !== last.seq + 1)
          damaged(`block ${block.seq} follows block ${last.seq}: blocks are missing`);
        first ??= block;
        last = block;
        check.blocks++;
        let slices: Uint8Array[];
        try {
          slices = recordBytes(blockHeaders(block), block.data);
        } catch (error) {
          damaged(`block ${block.seq} is malformed: ${describe(error)}`);
          continue;
        }
        for (const data of slices) {
          let record: ReturnType<typeof fromBinary<typeof AuditRecordSchema>>;
          try {
            record = fromBinary(AuditRecordSchema, data);
          } catch (error) {
            damaged(`a record of block ${block.seq} does not decode: ${describe(error)}`);
            continue;
          }
          check.records++;
          if (check.firstSequence === "") {
            check.firstSequence = String(record.sequence);
            firstPrevHash = record.prevHash;
          }
          check.lastSequence = String(record.sequence);
          lastHash = record.hash;
          const found = checker.check(record, data);
          if (found) {
            check.problems.push(`record ${record.sequence} (block ${block.seq}): ${found.reason}`);
            broke(found);
          }
        }
      }
    }
    const told: [string, unknown, unknown][] = [
      ["blocks", footer.blocks, check.blocks],
      ["records", footer.records, check.records],
      ["firstStreamSeq", footer.firstStreamSeq, first?.seq],
      ["lastStreamSeq", footer.lastStreamSeq, last?.seq ?? footer.lastStreamSeq],
      ["firstSequence", footer.firstSequence, check.firstSequence],
      ["lastSequence", footer.lastSequence, check.lastSequence],
      ["firstPrevHash", footer.firstPrevHash, firstPrevHash],
      ["lastHash", footer.lastHash, lastHash],
    ];
    // Checked after the frames, so that a damaged frame is placed at the first record it held.
    if (!(await reader.checksumMatches())) {
      const reason = "its checksum does not match: the file was changed after it was sealed";
      check.problems.unshift(reason);
      broke({ ...segmentStart, reason });
    }
    if (!unreadable) {
      for (const [field, footerValue, found] of told) {
        if (footerValue !== found)
          damaged(`its footer says ${field} ${String(footerValue)}, its blocks ${String(found)}`);
      }
    }
  } finally {
    await reader.close();
  }
  return { checked: checker.checked - before, unreadable };
}

/** A break that is not one record's: placed after the last record that checked. */
function afterHead(
  checker: ChainChecker,
  kind: "missing-segment" | "damaged",
  reason: string,
): Omit<ArchiveBreak, "segment"> {
  const head = checker.head;
  return {
    kind,
    sequence: head ? head.sequence + 1n : 0n,
    expectedHash: head?.hash ?? "",
    actualHash: "",
    reason,
  };
}

function describe(error: unknown): string {
  if (error instanceof SegmentError) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${code}: ${(error as Error).message}` : String((error as Error).message ?? error);
}
