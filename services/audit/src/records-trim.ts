import type { Logger } from "@toolmesh/log";
import { streamNames } from "@toolmesh/nats";
import type { JetStreamManager } from "nats";
import { AUDIT_CONSUMER } from "./recorder.js";

/** How often the record stream is trimmed below what the chain writer acknowledged. */
const TRIM_INTERVAL_MS = 1000;
/** How often its fill is looked at, to trim sooner when it fills fast. */
const CHECK_INTERVAL_MS = 100;
/** The share of the stream's byte limit past which it is trimmed at once. */
const EARLY_TRIM_SHARE = 1 / 8;

/**
 * Removes the record batches the chain writer has chained (at or below its consumer's ack floor)
 * from `TOOLMESH_RECORDS` in one purge, once a second — or as soon as the stream holds an eighth
 * of its byte limit, so large records at full speed never fill it while the chain writer keeps
 * up: the stream then holds only the work not yet done, as a work queue would, at one stored
 * write a second instead of one a batch.
 */
export class RecordsTrim {
  private timer: NodeJS.Timeout | undefined;
  private trimming: Promise<number> | undefined;
  private lastTrim = 0;

  constructor(private readonly deps: { jsm: JetStreamManager; log: Logger }) {}

  start(): void {
    this.timer = setInterval(() => {
      this.trimming ??= this.trim().finally(() => {
        this.trimming = undefined;
      });
    }, CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * One trim, when a second passed since the last or the stream holds an eighth of its limit (or
   * always, with `force`); resolves with the sequence kept from (0 when nothing was trimmed).
   */
  async trim(force = false): Promise<number> {
    const { jsm, log } = this.deps;
    try {
      const { state, config } = await jsm.streams.info(streamNames.records);
      const due =
        force ||
        Date.now() - this.lastTrim >= TRIM_INTERVAL_MS ||
        (config.max_bytes > 0 && state.bytes >= config.max_bytes * EARLY_TRIM_SHARE);
      if (!due || state.messages === 0) return 0;
      const consumer = await jsm.consumers.info(streamNames.records, AUDIT_CONSUMER);
      const floor = consumer.ack_floor.stream_seq;
      if (floor < state.first_seq) return 0;
      this.lastTrim = Date.now();
      await jsm.streams.purge(streamNames.records, { seq: floor + 1 });
      return floor + 1;
    } catch (error) {
      log.warn({ err: error }, "cannot trim the record stream; retrying");
      return 0;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.trimming;
  }
}
