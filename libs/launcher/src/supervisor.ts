import { type RestartPolicy, RestartWindow } from "./restart-policy.js";
import { StackError } from "./stack-error.js";

/** How a process ended: `code 1`, `signal SIGKILL`, or why a restart did not become ready. */
export interface ProcessEnd {
  died: string;
  /** Its last lines of output. */
  lastLines: string;
}

/** A restart the supervisor is about to make. */
export interface RestartingEvent extends ProcessEnd {
  name: string;
  /** 1 for the first restart within the policy's window, 2 for the next … */
  attempt: number;
  delayMs: number;
}

/** A process that exited once more than the policy allows: the stack should stop. */
export interface CrashLoopEvent extends ProcessEnd {
  name: string;
  /** Says which process, how often it exited within which window, and how it died last. */
  message: string;
}

/** What a supervisor tells the launcher. */
export interface SupervisionEvents {
  restarting(event: RestartingEvent): void;
  /** The process is back: ready, and SERVING where it has a port. */
  restarted(event: { name: string; attempt: number; downMs: number }): void;
  crashLoop(event: CrashLoopEvent): void;
}

/** `code 1` or `signal SIGKILL`, for a log line. */
export function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/**
 * Restarts one process (a service or a nats-server) each time it exits without being asked to,
 * after a jittered exponential backoff, until it exits more often than the policy allows within
 * its window. The process tells it of each such exit and cancels it whenever it is stopped,
 * killed or started on purpose, so a deliberate stop is never undone by a pending restart.
 */
export class Supervisor {
  private readonly window: RestartWindow;
  private timer: NodeJS.Timeout | undefined;
  /** Bumped by cancel(): a restart begun in an older epoch is forgotten, whatever its outcome. */
  private epoch = 0;
  private downSince = 0;
  private count = 0;
  private last: { at: Date; died: string } | undefined;

  constructor(
    readonly name: string,
    readonly policy: RestartPolicy,
    private readonly events: SupervisionEvents,
  ) {
    this.window = new RestartWindow(policy);
  }

  /** Restarts made since the stack started. */
  get restarts(): number {
    return this.count;
  }

  /** When the last restart was decided, and how the process had died. */
  get lastRestart(): { at: Date; died: string } | undefined {
    return this.last;
  }

  /** True from an exit until the process is back, for good after a crash loop; false once cancelled. */
  get down(): boolean {
    return this.downSince !== 0;
  }

  /** Told by the process when it exits on its own; `relaunch` starts it again and waits for ready. */
  exited(end: ProcessEnd, relaunch: () => Promise<void>): void {
    const now = Date.now();
    if (this.downSince === 0) this.downSince = now;
    const recent = this.window.recent;
    const next = this.window.next();
    if (!next) {
      // It stays down: the launcher stops the stack.
      const { maxRestarts, windowMs } = this.policy;
      this.events.crashLoop({
        ...end,
        name: this.name,
        message: `${this.name} keeps crashing: it exited again (${end.died}) after ${recent} restart${recent === 1 ? "" : "s"} within ${windowMs / 1000} s, the most TOOLMESH_RESTART_LIMIT (${maxRestarts}) and TOOLMESH_RESTART_WINDOW_MS (${windowMs}) allow`,
      });
      return;
    }
    this.count++;
    this.last = { at: new Date(now), died: end.died };
    this.events.restarting({ ...end, name: this.name, ...next });
    const epoch = this.epoch;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (epoch !== this.epoch) return;
      relaunch().then(
        () => {
          if (epoch !== this.epoch) return;
          const downMs = Date.now() - this.downSince;
          this.downSince = 0;
          this.events.restarted({ name: this.name, attempt: next.attempt, downMs });
        },
        (error: unknown) => {
          if (epoch !== this.epoch) return;
          this.exited(endOf(error), relaunch);
        },
      );
    }, next.delayMs);
  }

  /** Drops a pending restart and ignores one under way: the process is stopped or started on purpose. */
  cancel(): void {
    this.epoch++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.downSince = 0;
  }
}

function endOf(error: unknown): ProcessEnd {
  if (error instanceof StackError) {
    return { died: error.died ?? error.reason, lastLines: error.lastLines };
  }
  return { died: error instanceof Error ? error.message : String(error), lastLines: "" };
}
