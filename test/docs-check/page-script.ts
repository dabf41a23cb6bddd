import type { DocBlock } from "./blocks.js";

/** A stretch of a page's shell that ends where the page shows output (`# →`) or a block ends. */
export interface Step {
  id: number;
  /** Markdown line where the step's commands begin. */
  line: number;
  /** The output the page shows for the step's last command, and the line where it starts. */
  expected?: { line: number; text: string };
}

/** One bash script for all the shell blocks of a page, in order, so variables carry over. */
export interface PageScript {
  script: string;
  /** The markdown line of each script line (index = script line − 1); 0 for the check's own. */
  lines: number[];
  steps: Step[];
  /** The `NAME=…` values the reader supplies, by name. */
  placeholders: string[];
}

/** Printed before each step's output, so the output can be cut into steps. */
export const STEP_MARK = "@@docs-check step ";

// Every command that fails (the ERR trap: not those in conditions) is written to fd 3 with its
// step, so a failure in the middle of a block is found, not only the block's last status. curl
// fails on an HTTP error status (the docs' `curl -s` would print the error and exit 0), and npx
// runs the repository's own binaries only, without npm's start-up or a download.
const PREAMBLE = String.raw`set -o pipefail
exec 2>&1 3>>"$DOCS_CHECK_FAILURES"
__docs_step=0
trap '__docs_status=$?; printf "%s\t%s\t%s\n" "$__docs_step" "$__docs_status" "$LINENO" >&3' ERR
curl() { command curl --fail-with-body "$@"; }
npx() {
  if [[ -x "$DOCS_CHECK_BIN/$1" ]]; then "$DOCS_CHECK_BIN/$@"
  else echo "docs check: npx $1 is not a binary of this repository's node_modules" >&2; return 127; fi
}
`;

const ARROW = /(^|\s)#\s*→(.*)$/;
const CONTINUED = /^\s*#\s{2,}\S/;
const PLACEHOLDER = /^(\s*)([A-Z][A-Z0-9_]*)=…(\s+#.*)?\s*$/;

/** A `console` block's lines as shell: `$ ` lines are commands, the rest the output they show. */
function shellLines(block: DocBlock): string[] {
  if (block.lang !== "console") return block.lines;
  return block.lines.map((l) =>
    l.startsWith("$ ") ? l.slice(2) : l.trim() === "" ? l : `# → ${l}`,
  );
}

/** Builds the bash script of a page's runnable shell blocks (`localise` rewrites addresses). */
export function pageScript(blocks: DocBlock[], localise: (line: string) => string): PageScript {
  const out: string[] = [];
  const lines: number[] = [];
  const emit = (text: string, mdLine = 0) => {
    out.push(text);
    lines.push(mdLine);
  };
  for (const line of PREAMBLE.trimEnd().split("\n")) emit(line);
  const steps: Step[] = [];
  const placeholders = new Set<string>();
  const begin = (line: number) => {
    const step: Step = { id: steps.length + 1, line };
    steps.push(step);
    emit(`__docs_step=${step.id}; printf '\\n${STEP_MARK}%s@@\\n' ${step.id}`);
    return step;
  };
  for (const block of blocks) {
    const shell = shellLines(block);
    let step = begin(block.line + 1);
    for (let i = 0; i < shell.length; i++) {
      const line = shell[i] as string;
      const mdLine = block.line + 1 + i;
      const placeholder = PLACEHOLDER.exec(line);
      if (placeholder) {
        const name = placeholder[2] as string;
        placeholders.add(name);
        emit(`${placeholder[1]}: "\${${name}:?the docs check supplies no ${name}}"`, mdLine);
        continue;
      }
      emit(localise(line), mdLine);
      const arrow = ARROW.exec(line);
      if (!arrow) continue;
      const text = [arrow[2] as string];
      while (i + 1 < shell.length) {
        const next = shell[i + 1] as string;
        const more = ARROW.exec(next);
        if (more && next.trim().startsWith("#")) text.push(more[2] as string);
        else if (CONTINUED.test(next)) text.push(next.replace(/^\s*#/, ""));
        else break;
        i++;
        emit(next, block.line + 1 + i);
      }
      step.expected = { line: mdLine, text: text.join("\n") };
      if (i + 1 < shell.length) step = begin(block.line + 2 + i);
    }
  }
  // A command the page shows failing may end it; a syntax error still ends bash with 2.
  emit("exit 0");
  return { script: `${out.join("\n")}\n`, lines, steps, placeholders: [...placeholders] };
}

/**
 * The parts of shown output that every run prints alike: status and code words (upper case, such
 * as CALL_STATUS_SUCCESS or INVALID_ARGUMENT) and the JSON fields `code` and `ok`. Ids, times
 * and figures vary from run to run and are not compared.
 */
export function stableParts(expected: string): string[] {
  const words = expected.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b/g) ?? [];
  const fields = expected.match(/"(?:code|ok)":(?:"[^"…]*"|true|false)/g) ?? [];
  return [...new Set([...words.filter((w) => w.length >= 3), ...fields])];
}

/** Whether output holds a stable part: a status word as a whole word (SERVING is not NOT_SERVING). */
export function printedPart(output: string, part: string): boolean {
  if (part.startsWith('"')) return output.includes(part);
  return new RegExp(`(?<![A-Za-z0-9_])${part}(?![A-Za-z0-9_])`).test(output);
}

/** The exit status the shown output allows its command: `(exit code N)`, or curl's 22 for an error. */
export function allowedStatus(expected: string | undefined, status: number): boolean {
  if (!expected) return false;
  const code = /exit code (\d+)/.exec(expected);
  if (code && Number(code[1]) === status) return true;
  // --fail-with-body: curl exits 22 on an HTTP error, which the page shows as its JSON.
  return status === 22 && /"code":"/.test(expected);
}

/** Cuts a page's output into the output of each step, by step id. */
export function outputOfSteps(output: string): Map<number, string> {
  const parts = new Map<number, string>();
  const pattern = new RegExp(`\\n${STEP_MARK}(\\d+)@@\\n`, "g");
  let last: { id: number; from: number } | undefined;
  for (const m of output.matchAll(pattern)) {
    if (last) parts.set(last.id, output.slice(last.from, m.index));
    last = { id: Number(m[1]), from: (m.index ?? 0) + m[0].length };
  }
  if (last) parts.set(last.id, output.slice(last.from));
  return parts;
}
