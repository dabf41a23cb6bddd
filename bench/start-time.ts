import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { stackServices } from "@toolmesh/launcher";
import { freePort, LineWatcher, repoRoot } from "@toolmesh/testkit";
import { runLine, writeResultsFile } from "./results-file.js";

// npm run bench:start: how long `npm start` takes from spawn until it says every service is
// SERVING, on an empty data directory and again on the one the first start left (tokens, the NATS
// store, the audit index), BENCH_START_RUNS times each. Ports are free ones, so a running stack
// is not disturbed. Writes the "Start-up" section of bench/results.md (target < 4 s).
const RUNS = Number(process.env.BENCH_START_RUNS ?? 3);
const TARGET_S = 4;

/** One `npm start` (scripts/start.ts, as npm runs it) until ready; stopped with SIGINT. */
async function startOnce(dataDir: string, env: Record<string, string>): Promise<number> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(repoRoot, "scripts", "start.ts")],
    {
      cwd: repoRoot,
      env: { ...process.env, ...env, TOOLMESH_DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const out = new LineWatcher(child.stdout);
  const err = new LineWatcher(child.stderr);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    await out.waitFor((l) => l.includes("all services are SERVING"), 60_000, "npm start");
    return (performance.now() - started) / 1000;
  } catch (error) {
    throw new Error(`${String(error)}\n${err.tail()}`);
  } finally {
    child.kill("SIGINT");
    await exited;
  }
}

/** Ports of its own for each start: a port free a minute ago may be another process's by now. */
async function freshPorts(): Promise<Record<string, string>> {
  const env: Record<string, string> = { TOOLMESH_NATS_PORT: String(await freePort()) };
  for (const s of stackServices) if (s.portEnv) env[s.portEnv] = String(await freePort());
  return env;
}
const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-start-"));
const fresh: number[] = [];
const again: number[] = [];
try {
  for (let run = 0; run < RUNS; run++) {
    const dir = path.join(dataDir, `run-${run}`);
    fresh.push(await startOnce(dir, await freshPorts()));
    again.push(await startOnce(dir, await freshPorts()));
    process.stderr.write(
      `run ${run + 1}: ${fresh.at(-1)?.toFixed(2)} s fresh, ${again.at(-1)?.toFixed(2)} s again\n`,
    );
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const verdict = (s: number) => (s < TARGET_S ? "met" : "MISSED");
const text = [
  "## Start-up",
  "",
  runLine("npm run bench:start"),
  "",
  `\`npm start\` (nats-server and every service, each waited for until SERVING) from spawn to "all services are SERVING", ${RUNS} runs each; median and every run.`,
  "",
  "| data directory | median s | runs s | target |",
  "|---|---:|---|---|",
  `| empty (first start: bus keys, tokens, streams) | ${median(fresh).toFixed(2)} | ${fresh.map((s) => s.toFixed(2)).join(", ")} | < ${TARGET_S} s: ${verdict(median(fresh))} |`,
  `| the one the first start left | ${median(again).toFixed(2)} | ${again.map((s) => s.toFixed(2)).join(", ")} | < ${TARGET_S} s: ${verdict(median(again))} |`,
].join("\n");
await writeResultsFile(text);
process.stdout.write(`${text}\n`);
process.exit(0);
