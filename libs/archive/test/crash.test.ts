import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { listSegments, removeUnsealed } from "../src/archive-dir.js";
import { verifyArchive } from "../src/archive-verifier.js";

const writerScript = path.join(path.dirname(fileURLToPath(import.meta.url)), "write-segments.ts");

/**
 * Starts the writer, lets it run `ms` after it printed `line`, and kills it with SIGKILL
 * (`mid-segment`: the writer stops inside its second segment and prints that).
 */
async function writeAndKill(dir: string, ms: number, line = "writing"): Promise<void> {
  const args = ["--import", "tsx", writerScript, dir, ...(line === "mid-segment" ? [line] : [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split("\n").includes(line)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the writer exited early (${code})`)));
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await new Promise((resolve) => setTimeout(resolve, ms));
  child.kill("SIGKILL");
  await exited;
}

describe("a writer killed at any moment", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("leaves whole segments or none: every sealed one verifies, the cut one is only a temp file", async () => {
    let sealed = 0;
    let unsealed = 0;
    // Kills at moments the machine's speed decides, and one that lands inside a segment always.
    const kills: [number, string?][] = [[150], [420], [730], [1100], [1500], [0, "mid-segment"]];
    for (const [ms, line] of kills) {
      const dir = await mkdtemp(path.join(tmpdir(), "toolmesh-archive-crash-"));
      dirs.push(dir);
      await writeAndKill(dir, ms, line);
      const segments = await listSegments(dir);
      sealed += segments.length;
      if (segments.length > 0) {
        const verdict = await verifyArchive(dir);
        expect(verdict.segments.flatMap((s) => s.problems)).toEqual([]);
        expect(verdict.ok).toBe(true);
      }
      const removed = await removeUnsealed(dir);
      expect(removed.length).toBeLessThanOrEqual(1);
      unsealed += removed.length;
      expect((await readdir(dir)).sort()).toEqual(segments.map((s) => s.name).sort());
    }
    // The kills landed both between segments and inside one.
    expect(sealed).toBeGreaterThan(0);
    expect(unsealed).toBeGreaterThan(0);
  });
});
