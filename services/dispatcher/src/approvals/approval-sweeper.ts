import type { Logger } from "@toolmesh/log";
import type { ApprovalDesk } from "./approval-desk.js";

export interface ApprovalSweepSettings {
  intervalMs: number;
  /** A decided hold older than this is closed as left unfinished (approved / denied or expired). */
  staleAfterMs: { approved: number; refused: number };
}

/**
 * Every Dispatcher sweeps the held calls as often as it sweeps leases: holds past their expiry
 * end REFUSED `approval_expired`, and decided holds whose Dispatcher stopped half-way are
 * closed. Compare-and-set on each hold keeps two sweepers from closing one call twice.
 */
export class ApprovalSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;

  constructor(
    private readonly desk: ApprovalDesk,
    private readonly settings: ApprovalSweepSettings,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sweepOnce().catch((error: unknown) => {
        this.log.warn({ err: error }, "approval sweep failed; retrying at the next interval");
      });
    }, this.settings.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping?.catch(() => {});
  }

  /** One pass over the held calls; resolves with how many it closed. */
  sweepOnce(): Promise<number> {
    this.sweeping ??= this.desk.sweep(this.settings.staleAfterMs).finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }
}
