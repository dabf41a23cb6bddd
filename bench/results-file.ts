import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "@toolmesh/testkit";

/** bench/results.md: each benchmark owns some `## ` sections and leaves the others as they are. */
export const resultsFile = path.join(repoRoot, "bench", "results.md");

/** The `## ` sections of a results text, by heading (the text before the first one is "") . */
function sections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = text.split(/^(?=## )/m);
  for (const part of parts) {
    const heading = part.startsWith("## ") ? (part.split("\n", 1)[0] ?? "").slice(3).trim() : "";
    out.set(heading, part.trimEnd());
  }
  return out;
}

/**
 * Writes the results file with `own` (a header and the sections this benchmark owns) in place of
 * its earlier version, keeping every section another benchmark wrote where it was; a section new
 * to the file goes at its end.
 */
export async function writeResultsFile(own: string): Promise<void> {
  const current = sections(await readFile(resultsFile, "utf8").catch(() => ""));
  const mine = sections(own);
  // Sections keep their place in the file; a section seen for the first time goes at the end.
  const merged = new Map<string, string>();
  for (const [heading, body] of current) merged.set(heading, mine.get(heading) ?? body);
  for (const [heading, body] of mine) if (!merged.has(heading)) merged.set(heading, body);
  const text = [...merged.values()].filter((body) => body !== "").join("\n\n");
  await writeFile(resultsFile, `${text}\n`);
}

/** The line under a section's heading: when, on what, how loaded, and the command that ran. */
export function runLine(command: string): string {
  const cpus = os.cpus();
  const load = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  return `${new Date().toISOString()} · ${cpus.length} cores (${cpus[0]?.model.trim()}) · node ${process.version} · load average ${load} at the end (the machine is shared) · \`${command}\``;
}
