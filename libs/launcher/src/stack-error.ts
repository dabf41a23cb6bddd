/** Raised when a process of the stack cannot come up; the message says which and why. */
export class StackError extends Error {
  override name = "StackError";
  /** The message without the process's last lines. */
  readonly reason: string;
  /** The process's last output, if any; it follows the reason in the message. */
  readonly lastLines: string;
  /** How the process ended, without its name ("code 1 before it was ready"), for a restart's report. */
  readonly died: string | undefined;

  constructor(reason: string, detail: { lastLines?: string; died?: string } = {}) {
    super(detail.lastLines ? `${reason}\n${detail.lastLines}` : reason);
    this.reason = reason;
    this.lastLines = detail.lastLines ?? "";
    this.died = detail.died;
  }
}
