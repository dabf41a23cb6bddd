import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { LineWatcher } from "./lines.js";

/** A supervised child process whose output goes to a log file (if given) and a ring of recent lines. */
export class Child {
  readonly process: ChildProcess;
  readonly stdout: LineWatcher;
  readonly stderr: LineWatcher;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly logFile: WriteStream | undefined;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    options: { cwd: string; env: NodeJS.ProcessEnv; logPath?: string | undefined },
  ) {
    this.process = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = this.process.stdout as NonNullable<ChildProcess["stdout"]>;
    const err = this.process.stderr as NonNullable<ChildProcess["stderr"]>;
    if (options.logPath) {
      const logFile = createWriteStream(options.logPath, { flags: "a" });
      out.pipe(logFile, { end: false });
      err.pipe(logFile, { end: false });
      this.logFile = logFile;
    }
    this.stdout = new LineWatcher(out);
    this.stderr = new LineWatcher(err);
    this.exited = new Promise((resolve) => {
      this.process.once("exit", (code, signal) => resolve({ code, signal }));
      this.process.once("error", () => resolve({ code: 127, signal: null }));
    });
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /**
   * The last lines of both streams, for a report on why it died: enough for the whole of an
   * uncaught error's stack, whose first line says what went wrong.
   */
  lastLines(count = 40): string {
    return [...this.stdout.lines, ...this.stderr.lines].slice(-count).join("\n");
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves with the exit code. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.running) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.logFile?.end();
    return (await this.exited).code;
  }

  /** SIGKILL, as a crash would, and wait for the exit. */
  async kill(): Promise<void> {
    if (this.running) this.process.kill("SIGKILL");
    await this.exited;
    this.logFile?.end();
  }
}
