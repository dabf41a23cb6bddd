import { readFileSync } from "node:fs";

/** utime + stime of a process in ms (Linux /proc; 0 elsewhere). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** Resident memory of a process in MB (Linux /proc; 0 elsewhere). */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The largest RSS each process reached while it ran, sampled every `everyMs`. */
export class PeakRss {
  private readonly peaks = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pids: () => Map<string, number>,
    everyMs = 200,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    for (const [role, pid] of this.pids()) {
      const mb = rssMb(pid);
      if (mb > (this.peaks.get(role) ?? 0)) this.peaks.set(role, mb);
    }
  }

  /** Stops sampling; the peak of each process in MB. */
  stop(): Record<string, number> {
    clearInterval(this.timer);
    this.sample();
    return Object.fromEntries(this.peaks);
  }
}
