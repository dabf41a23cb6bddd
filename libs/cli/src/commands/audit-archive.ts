import { existsSync } from "node:fs";
import { type ArchiveVerdict, verifyArchive } from "@toolmesh/archive";
import type { CliContext } from "../context.js";
import { UsageError } from "../context.js";

/**
 * `toolmesh audit verify --archive DIR`: verifies an archive directory offline, with no stack
 * running: every segment's checksum, footer and frames, every record's hash, and the chain across
 * blocks and segments. Exit code 1 names each damaged or missing segment and the first broken
 * record.
 */
export async function verifyArchiveDir(ctx: CliContext, dir: string): Promise<number> {
  if (!existsSync(dir))
    throw new UsageError(
      `--archive ${dir}: no such directory; pass the audit archive (TOOLMESH_AUDIT_ARCHIVE_DIR, by default <data dir>/audit/archive)`,
    );
  const verdict = await verifyArchive(dir);
  ctx.out.result(jsonOf(verdict), () => {
    if (verdict.segments.length === 0) {
      ctx.out.line(
        `${ctx.out.paint("red", "broken")}: ${dir} holds no sealed segment (audit-<first>-<last>.seg)`,
      );
      return;
    }
    ctx.out.table(
      ["SEGMENT", "BLOCKS", "RECORDS", "STATUS"],
      verdict.segments.map((s) => [
        s.name,
        `${s.firstStreamSeq}–${s.lastStreamSeq}`,
        s.records > 0 ? `${s.firstSequence}–${s.lastSequence}` : "-",
        s.problems.length === 0
          ? ctx.out.paint("green", "ok")
          : ctx.out.paint("red", s.problems.join("; ")),
      ]),
    );
    for (const gap of verdict.missing)
      ctx.out.line(
        `${ctx.out.paint("red", "missing")}: stream sequences ${gap.fromStreamSeq}–${gap.toStreamSeq}, between ${gap.after} and ${gap.before}`,
      );
    const counts = `${verdict.recordsChecked} records checked in ${verdict.segments.length} segments`;
    const broken = verdict.firstBreak;
    if (broken)
      ctx.out.line(
        `${ctx.out.paint("red", "broken")} at record ${broken.sequence} in ${broken.segment}: ${broken.reason} (${counts})`,
      );
    else if (!verdict.ok) ctx.out.line(`${ctx.out.paint("red", "broken")} (${counts})`);
    else
      ctx.out.line(
        `${ctx.out.paint("green", "intact")}: ${counts}, records ${verdict.firstSequence}–${verdict.lastSequence}`,
      );
  });
  return verdict.ok ? 0 : 1;
}

/** The verdict as JSON (chain sequences as decimal strings). */
function jsonOf(verdict: ArchiveVerdict): unknown {
  return JSON.parse(
    JSON.stringify(verdict, (_key, value) => (typeof value === "bigint" ? String(value) : value)),
  );
}
