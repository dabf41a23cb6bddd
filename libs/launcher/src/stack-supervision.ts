import type { LauncherMetrics } from "./launcher-metrics.js";
import type { RestartPolicy } from "./restart-policy.js";
import { Supervisor } from "./supervisor.js";

/** Why a running stack has to stop: a process that keeps crashing. */
export interface StackFailure {
  /** The process, as stack.json names it (dispatcher-2, nats-server …). */
  name: string;
  /** Which process, how often it exited within which window, and how it died last. */
  message: string;
  lastLines: string;
}

/** What stack.json says of one supervised process. */
export interface ProcessState {
  /** 0 while it is down between a crash and its restart. */
  pid: number;
  restarts: number;
  /** When the last restart was decided (ISO 8601), and how the process had died. */
  lastRestartAt?: string;
  lastExit?: string;
}

/** How many of a crashed process's last lines a restart's report shows (its log file has all). */
const REPORTED_LINES = 8;

/**
 * The supervisors of one stack's processes under one policy: each restart is said (process, how
 * it died, attempt, delay, last lines) and counted (metric and stack.json), and the first crash
 * loop settles `failed`.
 */
export class StackSupervision {
  readonly failed: Promise<StackFailure>;
  private fail: (failure: StackFailure) => void = () => {};
  private readonly supervisors = new Map<
    string,
    { supervisor: Supervisor; pid: () => number; where: () => string }
  >();

  constructor(
    private readonly options: {
      policy: RestartPolicy;
      metrics: LauncherMetrics;
      say: (line: string) => void;
      /** Called after each restart begins and ends: stack.json is written again. */
      changed: () => void;
    },
  ) {
    this.failed = new Promise((resolve) => {
      this.fail = resolve;
    });
  }

  /** A supervisor for one process; `where` says where it listens, for the line saying it is back. */
  supervisor(name: string, process: { pid: () => number; where: () => string }): Supervisor {
    const { metrics, say, changed } = this.options;
    const supervisor = new Supervisor(name, this.options.policy, {
      restarting: (event) => {
        metrics.restarted(name, supervisor.lastRestart?.at ?? new Date());
        say(
          `${name} exited (${event.died}); restarting it in ${event.delayMs} ms (restart ${event.attempt} of at most ${this.options.policy.maxRestarts} within ${this.options.policy.windowMs / 1000} s)${event.lastLines ? "; its last lines:" : ""}`,
        );
        for (const line of lastOf(event.lastLines)) say(`  ${line}`);
        changed();
      },
      restarted: (event) => {
        say(`${name} is back${process.where()}, ${event.downMs} ms after it exited`);
        changed();
      },
      crashLoop: (event) => this.fail({ name, message: event.message, lastLines: event.lastLines }),
    });
    metrics.known(name);
    this.supervisors.set(name, { supervisor, ...process });
    return supervisor;
  }

  /** Every supervised process's pid and restarts, by name, as stack.json lists them. */
  processes(): Record<string, ProcessState> {
    const out: Record<string, ProcessState> = {};
    for (const [name, { supervisor, pid }] of this.supervisors) {
      const last = supervisor.lastRestart;
      out[name] = {
        pid: supervisor.down ? 0 : pid(),
        restarts: supervisor.restarts,
        ...(last ? { lastRestartAt: last.at.toISOString(), lastExit: last.died } : {}),
      };
    }
    return out;
  }
}

function lastOf(lines: string): string[] {
  return lines ? lines.split("\n").slice(-REPORTED_LINES) : [];
}
