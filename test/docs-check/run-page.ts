import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { type DocBlock, runnable } from "./blocks.js";
import {
  allowedStatus,
  outputOfSteps,
  pageScript,
  printedPart,
  stableParts,
} from "./page-script.js";

export interface PageRunOptions {
  /** The page's path, for messages (`docs/cli.md`). */
  page: string;
  blocks: DocBlock[];
  /** An empty directory the page's shell runs in; its `file=` blocks are written there. */
  workDir: string;
  /** The whole environment of the page's bash, the `NAME=…` values the page uses included. */
  env: Record<string, string>;
  /** Rewrites a line's default addresses to the stack's. */
  localise: (line: string) => string;
  timeoutMs: number;
}

export interface PageRun {
  /** What does not hold, each naming the page's line; empty when the page ran as shown. */
  problems: string[];
  /** Steps run; a page with none runs nothing. */
  steps: number;
  ms: number;
}

const tail = (text: string) => {
  const t = text.trim();
  return t.length > 1500 ? `…${t.slice(-1500)}` : t;
};

/** Runs a page's shell blocks in one bash and says which of its commands and outputs differ. */
export async function runPage(options: PageRunOptions): Promise<PageRun> {
  const { page, blocks, workDir, env } = options;
  const started = Date.now();
  for (const block of blocks)
    if (block.file) await writeFile(path.join(workDir, block.file), `${block.lines.join("\n")}\n`);
  const shell = runnable(blocks);
  const { script, lines, steps, placeholders } = pageScript(shell, options.localise);
  const markdown = new Map(shell.flatMap((b) => b.lines.map((l, i) => [b.line + 1 + i, l])));
  if (steps.length === 0) return { problems: [], steps: 0, ms: 0 };
  const problems = placeholders
    .filter((name) => env[name] === undefined)
    .map((name) => `${page}: ${name}=… is a value the docs check does not supply`);
  if (problems.length > 0) return { problems, steps: steps.length, ms: 0 };

  const scriptFile = path.join(workDir, ".docs-check.sh");
  const failuresFile = path.join(workDir, ".docs-check-failures");
  await writeFile(scriptFile, script);
  await writeFile(failuresFile, "");
  // Its own process group, so that what a page leaves in the background (`tail &`) ends with it.
  const bash = spawn("bash", [scriptFile], {
    cwd: workDir,
    env: { ...env, DOCS_CHECK_FAILURES: failuresFile },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  bash.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  bash.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const killGroup = () => {
    try {
      process.kill(-(bash.pid as number), "SIGKILL");
    } catch {
      // The group has ended already.
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, options.timeoutMs);
  const code = await new Promise<number | null>((resolve) => bash.on("exit", resolve));
  clearTimeout(timer);
  killGroup();

  const byStep = outputOfSteps(output);
  if (timedOut) problems.push(`${page}: still running after ${options.timeoutMs} ms`);
  const failures = (await readFile(failuresFile, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t"));
  for (const [id, status, scriptLine] of failures) {
    const step = steps[Number(id) - 1];
    if (step && allowedStatus(step.expected?.text, Number(status))) continue;
    const line = lines[Number(scriptLine) - 1] || step?.line;
    problems.push(
      `${page}:${line}: \`${markdown.get(line ?? 0)?.trim() ?? "?"}\` exited with ${status}; the page shows no such failure. Output:\n${tail(byStep.get(Number(id)) ?? output)}`,
    );
  }
  for (const step of steps) {
    const printed = byStep.get(step.id);
    if (printed === undefined) {
      problems.push(
        `${page}:${step.line}: never ran (bash exited with ${code} before). Output:\n${tail(output)}`,
      );
      break;
    }
    if (!step.expected) continue;
    const missing = stableParts(step.expected.text).filter((part) => !printedPart(printed, part));
    if (missing.length > 0)
      problems.push(
        `${page}:${step.expected.line}: the output lacks ${missing.join(", ")} that the page shows. Output:\n${tail(printed)}`,
      );
  }
  if (code !== 0 && problems.length === 0)
    problems.push(`${page}: bash exited with ${code}. Output:\n${tail(output)}`);
  return { problems, steps: steps.length, ms: Date.now() - started };
}
