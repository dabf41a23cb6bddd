/**
 * The fenced code blocks of a documentation page, as the docs check reads them.
 *
 * Conventions a page follows (test/docs-examples.test.ts runs the pages):
 * - A block with info `sh`, `bash`, `shell` or `console` is run, unless the line before it (blank
 *   lines apart) is `<!-- not run: <reason> -->`.
 * - A block whose info has `file=<name>` (```python file=greet_tool.py) is written to the page's
 *   working directory before its shell blocks run.
 * - A line `NAME=…` in a shell block is a value the reader supplies; the check supplies it.
 * - `# →` starts the output a command shows; lines right after it that begin with `#` and two
 *   spaces continue it.
 */

/** One fenced block of a page. */
export interface DocBlock {
  /** Line of the opening fence, from 1. */
  line: number;
  /** The language: the first word of the info string. */
  lang: string;
  /** The block's lines, without the fences. */
  lines: string[];
  /** Why the block is not run, when it is marked so. */
  notRun?: string;
  /** The file name a `file=` block is written to. */
  file?: string;
}

const SHELL = new Set(["sh", "bash", "shell", "console"]);
const NOT_RUN = /^<!--\s*not run:?(.*?)-->\s*$/;

/** The blocks the docs check runs: shell blocks not marked `not run`. */
export function runnable(blocks: DocBlock[]): DocBlock[] {
  return blocks.filter((b) => SHELL.has(b.lang) && !b.notRun);
}

/**
 * Reads every fenced block of a page; throws naming the line for a fence left open or a
 * `not run` mark without its reason.
 */
export function readBlocks(page: string, markdown: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const fence = open[1] as string;
    const [lang = "", ...rest] = (open[2] as string).trim().split(/\s+/);
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && (lines[i] as string).trim() !== fence; i++)
      body.push(lines[i] as string);
    if (i >= lines.length) throw new Error(`${page}:${start + 1}: a code fence is never closed`);
    const block: DocBlock = { line: start + 1, lang, lines: body };
    const file = rest.find((word) => word.startsWith("file="));
    if (file) block.file = file.slice("file=".length);
    let before = start - 1;
    while (before >= 0 && (lines[before] as string).trim() === "") before--;
    const mark = NOT_RUN.exec((lines[before] ?? "").trim());
    if (mark) {
      const reason = (mark[1] as string).trim();
      if (!reason)
        throw new Error(`${page}:${before + 1}: say why the block is not run: <!-- not run: … -->`);
      block.notRun = reason;
    }
    blocks.push(block);
  }
  return blocks;
}
