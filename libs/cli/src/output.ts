import type { Writable } from "node:stream";

/** How the CLI prints: JSON for scripts, tables for people, colour only on a terminal. */
export class Output {
  readonly json: boolean;
  readonly colour: boolean;

  constructor(
    private readonly out: Writable & { isTTY?: boolean },
    private readonly err: Writable,
    options: { json: boolean; env: NodeJS.ProcessEnv },
  ) {
    this.json = options.json;
    this.colour =
      !options.json &&
      out.isTTY === true &&
      options.env.NO_COLOR === undefined &&
      options.env.TERM !== "dumb";
  }

  /** A value as one JSON document (with --json) or via `human` otherwise. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.line(JSON.stringify(value, null, 2));
    else human();
  }

  line(text = ""): void {
    this.out.write(`${text}\n`);
  }

  /** A message for people on stderr (never mixed into --json output). */
  note(text: string): void {
    this.err.write(`${text}\n`);
  }

  error(text: string): void {
    this.err.write(`${this.paint("red", "error:")} ${text}\n`);
  }

  paint(colour: keyof typeof COLOURS, text: string): string {
    return this.colour ? `\u001b[${COLOURS[colour]}m${text}\u001b[0m` : text;
  }

  /** Rows under a header, columns padded to their widest cell. */
  table(header: string[], rows: string[][]): void {
    if (rows.length === 0) {
      this.note("(none)");
      return;
    }
    const widths = header.map((h, i) =>
      Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)),
    );
    const format = (cells: string[]) =>
      cells
        .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd();
    this.line(this.paint("bold", format(header)));
    for (const row of rows) this.line(format(row));
  }
}

const COLOURS = { red: 31, green: 32, yellow: 33, blue: 34, grey: 90, bold: 1 } as const;

/** The colour of a call status. */
export function statusColour(status: string): keyof typeof COLOURS {
  if (status.includes("SUCCESS")) return "green";
  if (status.includes("REFUSED") || status.includes("FAILURE")) return "red";
  return "yellow";
}
