import type { Logger } from "@toolmesh/log";

/** What a QuietReaderWatch asks of the reader it watches. */
export interface WatchedReader {
  /** The stream sequence the reader's next block should have. */
  expectedSeq(): number;
  /** When its consumer last delivered a block (or was created), ms since the epoch. */
  deliveredAt(): number;
  /** The log's last stream sequence, asked of the server. */
  lastSeq(): Promise<number>;
  /** Replaces the reader's consumer by one starting at expectedSeq. */
  readAgain(): Promise<void>;
}

/**
 * Watches a reader of the audit log that follows it with an ordered consumer, which nats.js finds
 * again on its own after most faults but not all: after a partition one stayed quiet, heartbeats
 * and all, while the log grew, and the index it fed stayed behind until a restart. When nothing
 * was delivered for `stallMs` and the log held later blocks at two checks with nothing delivered
 * between them (a block appended after a quiet spell may simply not be delivered yet), the watch
 * has the reader follow the log again from where it stopped.
 */
export class QuietReaderWatch {
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  /** When a check first saw the log ahead with nothing delivered since. */
  private behindSince: number | undefined;
  /** How many times the reader was made to follow the log again. */
  restarts = 0;

  constructor(
    private readonly reader: WatchedReader,
    private readonly stallMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.check(), Math.max(100, Math.floor(this.stallMs / 2)));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async check(): Promise<void> {
    if (this.checking || this.timer === undefined) return;
    const { reader } = this;
    if (Date.now() - reader.deliveredAt() < this.stallMs) {
      this.behindSince = undefined;
      return;
    }
    this.checking = true;
    try {
      const lastSeq = await reader.lastSeq();
      const now = Date.now();
      if (lastSeq < reader.expectedSeq() || this.timer === undefined) {
        this.behindSince = undefined;
        return;
      }
      if (this.behindSince === undefined || this.behindSince < reader.deliveredAt()) {
        this.behindSince = now;
        return;
      }
      if (now - this.behindSince < this.stallMs / 2) return;
      this.behindSince = undefined;
      this.log.warn(
        { from_seq: reader.expectedSeq(), last_seq: lastSeq, quiet_ms: this.stallMs },
        "the audit index received nothing while the log grew; following the log again",
      );
      this.restarts++;
      await reader.readAgain();
    } catch (error) {
      // NATS away or between leaders: the next check tries again.
      this.log.warn({ err: error }, "cannot check the audit index's reader of the log");
    } finally {
      this.checking = false;
    }
  }
}
