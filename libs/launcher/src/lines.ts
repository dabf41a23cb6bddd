import type { Readable } from "node:stream";

/** Keeps the last lines of a stream and lets a test await a line that matches. */
export class LineWatcher {
  readonly lines: string[] = [];
  private buffer = "";
  private readonly waiters = new Set<{
    test: (line: string) => boolean;
    resolve: (line: string) => void;
  }>();

  constructor(
    stream: Readable,
    private readonly keep = 500,
  ) {
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline = this.buffer.indexOf("\n");
      while (newline >= 0) {
        this.push(this.buffer.slice(0, newline));
        this.buffer = this.buffer.slice(newline + 1);
        newline = this.buffer.indexOf("\n");
      }
    });
  }

  private push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.keep) this.lines.shift();
    for (const waiter of this.waiters) {
      if (waiter.test(line)) {
        this.waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  }

  /** Resolves with the first line (already seen or future) that passes the test. */
  waitFor(test: (line: string) => boolean, timeoutMs: number, what: string): Promise<string> {
    const seen = this.lines.find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = {
        test,
        resolve: (line: string) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; last lines:\n${this.lines.slice(-20).join("\n")}`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** The last lines, for error messages. */
  tail(count = 20): string {
    return this.lines.slice(-count).join("\n");
  }
}
