import { spawn } from "node:child_process";
import path from "node:path";
import { repoRoot } from "@toolmesh/testkit";

// npm run bench: every section of bench/results.md, one benchmark after the other, each in a
// process and on a stack of its own so none measures another's leftovers. BENCH_SECTIONS picks
// some (for example `chain,start`); each is also an npm script of its own (docs/benchmark.md).
const SECTIONS: Record<string, string> = {
  chain: "run.ts",
  consumers: "consumers.ts",
  audit: "audit-scale.ts",
  registry: "registry-scale.ts",
  start: "start-time.ts",
  secrets: "secrets.ts",
  pools: "pools.ts",
  // Last: growing two stacks to 1,000,000 calls takes about twenty-five minutes (about twelve a
  // shape on the two shared cores).
  history: "history.ts",
};

const wanted = (process.env.BENCH_SECTIONS ?? Object.keys(SECTIONS).join(","))
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const unknown = wanted.filter((s) => !(s in SECTIONS));
if (unknown.length > 0) {
  process.stderr.write(
    `bench: unknown section(s) ${unknown.join(", ")}; choose from ${Object.keys(SECTIONS).join(", ")}\n`,
  );
  process.exit(2);
}

for (const section of wanted) {
  process.stderr.write(`\n== bench: ${section}\n`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(repoRoot, "bench", SECTIONS[section] as string)],
      { cwd: repoRoot, stdio: "inherit" },
    );
    child.once("exit", (c) => resolve(c ?? 1));
  });
  if (code !== 0) {
    process.stderr.write(`bench: ${section} failed (exit ${code})\n`);
    process.exit(code);
  }
}
process.stderr.write(`\nbench: every section written to bench/results.md\n`);
