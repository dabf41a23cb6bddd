import { type ChainBreak, ChainChecker } from "@toolmesh/archive";
import { readLogMessage } from "@toolmesh/records";
import type { LogReader } from "./log-reader.js";

/**
 * Verifies the chain as the log holds it (the archive's segments, then the log stream: the
 * source of truth, not the index), from the record at `fromSequence` or the oldest record kept,
 * whichever is later, up to the last record at the time of the call. `locate` names the log
 * message (block) to start reading at for a record sequence, from the index; the records before
 * `fromSequence` in it are skipped. Records older than anything kept (dropped before the log had
 * an archive, or segments past the archive's age limit) are not a break: the oldest kept record
 * is trusted for its link, and a gap that the archive's age limit opened while this ran is
 * skipped the same way. Holds one block at a time.
 */
export async function verifyChain(
  reader: LogReader,
  fromSequence: bigint,
  locate: (sequence: bigint) => number | undefined = () => undefined,
): Promise<{ checked: number; break?: ChainBreak }> {
  const { floor, last } = await reader.bounds();
  const located = fromSequence > 0n ? (locate(fromSequence) ?? 0) : 0;
  const start = Math.max(floor, located, 1);
  const checker = new ChainChecker();
  if (start > last) return { checked: 0 };
  let skipping = fromSequence > 0n;
  for await (const block of reader.blocks(start, last)) {
    for (const [i, { record, data }] of readLogMessage(block.headers, block.data).entries()) {
      // Only records before the first one asked for are skipped; every one after it counts.
      if (skipping && record.sequence < fromSequence) continue;
      skipping = false;
      const found = checker.check(record, data);
      // A gap before the first record of the oldest block kept is retention's doing.
      const trimmed = found?.kind === "missing" && i === 0 && (await reader.floor()) >= block.seq;
      if (found && !trimmed) return { checked: checker.checked, break: found };
    }
  }
  return { checked: checker.checked };
}
