import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Logger } from "@toolmesh/log";

/** V8's gc() with the options of its gc extension. */
type GcFunction = (options?: {
  type?: "major" | "minor";
  execution?: "sync" | "async";
  flavor?: "regular" | "last-resort";
}) => void;

/**
 * A collection that gives memory back to the system: V8's last-resort collection (what a low
 * memory notification runs), which also releases the pages V8 keeps pooled for reuse. The gc
 * extension is enabled for a new context only, so nothing else in the process sees a `gc`.
 * Undefined when the runtime refuses the flag.
 */
function memoryReducingCollection(): (() => void) | undefined {
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as GcFunction;
    return () => gc({ type: "major", execution: "sync", flavor: "last-resort" });
  } catch {
    return undefined;
  }
}

export interface MemoryReleaseOptions {
  /** What the work is, for the log line ("watches"). */
  what: string;
  /** Work in progress at its peak at least this high counts as a burst. */
  minPeak: number;
  /** Collections run at most this often. */
  minIntervalMs: number;
  /** How long after the work fell low the collection runs (closings come in a wave). */
  delayMs?: number;
  log: Logger;
  /** The collection; V8's memory-reducing one by default. */
  collect?: () => void;
  /** The process's resident memory in bytes, for the log line. */
  rss?: () => number;
}

/**
 * Gives back the memory of a burst of long-lived work (watches, tasks) once it has ended. What
 * such work allocates lives long enough to reach V8's old generation, and V8 keeps it, and the
 * pages it freed, until the old generation fills again, which an idle process may never do:
 * Callback held 200 MB more than it started with after 2,000 watches were opened and closed, with
 * 30 MB of it live. When the work in progress falls to a quarter of a peak of at least `minPeak`,
 * one memory-reducing collection runs `delayMs` after it last changed (about 0.1 s for a heap of
 * 30 MB), at most once per `minIntervalMs`.
 */
export class MemoryRelease {
  private peak = 0;
  private open = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastAt = 0;
  private readonly collect: (() => void) | undefined;

  constructor(private readonly options: MemoryReleaseOptions) {
    this.collect = options.collect ?? memoryReducingCollection();
  }

  /** Told of the work in progress whenever it changes. */
  track(open: number): void {
    this.open = open;
    if (open > this.peak) this.peak = open;
    if (!this.collect || this.peak < this.options.minPeak || open * 4 > this.peak) return;
    // Each change while the work is low moves the collection on: it runs once the wave of
    // closings is over, so it collects all of it.
    clearTimeout(this.timer);
    const delayMs = Math.max(
      this.options.delayMs ?? 1000,
      this.lastAt + this.options.minIntervalMs - Date.now(),
    );
    this.timer = setTimeout(() => this.release(), delayMs);
    this.timer.unref();
  }

  private release(): void {
    this.timer = undefined;
    // The work came back meanwhile: its memory is in use again.
    if (this.open * 4 > this.peak) return;
    const { log, rss = () => process.memoryUsage.rss() } = this.options;
    const before = rss();
    const started = performance.now();
    this.collect?.();
    this.lastAt = Date.now();
    const peak = this.peak;
    this.peak = this.open;
    log.info(
      {
        peak,
        ms: Math.round(performance.now() - started),
        rss_before_mb: Math.round(before / 2 ** 20),
        rss_after_mb: Math.round(rss() / 2 ** 20),
      },
      `a burst of ${this.options.what} ended; memory given back`,
    );
  }

  /** Cancels a collection not yet run. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
