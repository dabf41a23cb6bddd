import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/** fsyncs nats-server made per call, by what it synced. */
export interface FsyncCount {
  calls: number;
  /** `<stream> messages`, `<stream> consumer <durable>` … → fsyncs per call. */
  perCall: Record<string, number>;
  total: number;
}

/** True when strace can be run here (the fsync count is then part of the chain bench). */
export function straceAvailable(): boolean {
  return spawnSync("strace", ["-V"], { stdio: "ignore" }).status === 0;
}

/**
 * Counts the fsync and fdatasync calls nats-server (`pid`) makes while `work` runs, by the file
 * they sync: a stream's message blocks, a consumer's state, an atomic batch's staging store.
 * strace stops nats-server at each of those calls only (seccomp filter), so it slows what it
 * watches: the count is a run of its own, not one of the measured cells. `work` resolves with
 * the calls it made, once every consumer is done with them.
 */
export async function countFsyncs(pid: number, work: () => Promise<number>): Promise<FsyncCount> {
  const dir = await mkdtemp(path.join(tmpdir(), "toolmesh-bench-fsyncs-"));
  const out = path.join(dir, "strace.txt");
  const strace = spawn(
    "strace",
    ["-f", "--seccomp-bpf", "-y", "-e", "trace=fsync,fdatasync", "-o", out, "-p", String(pid)],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  try {
    // strace says "attached" on stderr once it follows every thread.
    await new Promise<void>((resolve, reject) => {
      let said = "";
      strace.stderr?.on("data", (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes("attached")) resolve();
      });
      strace.once("exit", (code) => reject(new Error(`strace exited (${code}): ${said}`)));
    });
    const calls = await work();
    const exited = new Promise((resolve) => strace.once("exit", resolve));
    strace.kill("SIGINT");
    await exited;
    const perFile = new Map<string, number>();
    let total = 0;
    for (const line of (await readFile(out, "utf8")).split("\n")) {
      const synced = /f(?:data)?sync\(\d+<([^>]*)>/.exec(line)?.[1];
      if (!synced) continue;
      const what = fileKind(synced);
      perFile.set(what, (perFile.get(what) ?? 0) + 1);
      total++;
    }
    const per = (n: number) => n / Math.max(1, calls);
    return {
      calls,
      perCall: Object.fromEntries([...perFile].map(([what, n]) => [what, per(n)])),
      total: per(total),
    };
  } finally {
    if (strace.exitCode === null) strace.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  }
}

/** What a synced file of nats-server's store is: `<stream> messages`, `… consumer <name>` … */
function fileKind(file: string): string {
  const match = /\/streams\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?/.exec(file);
  if (!match) return path.basename(file);
  const [, stream, area, name] = match;
  if (area === "msgs") return `${stream} messages`;
  if (area === "obs") return `${stream} consumer ${name}`;
  if (area === "batches") return `${stream} atomic batches`;
  return `${stream} ${area ?? "directory"}`;
}
