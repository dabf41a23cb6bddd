// The benches' /proc readings are the launcher's, under their short names.
import { processRssMb } from "@toolmesh/testkit";

export { processCpuMs as cpuMs, processRssMb as rssMb } from "@toolmesh/testkit";

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
      const mb = processRssMb(pid);
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
