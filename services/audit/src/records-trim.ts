import type { Logger } from "@toolmesh/log";
import { streamNames } from "@toolmesh/nats";
import type { JetStreamManager } from "nats";
import { AUDIT_CONSUMER } from "./recorder.js";

/** How often the record stream is trimmed below what the chain writer acknowledged. */
const TRIM_INTERVAL_MS = 1000;

/**
 * Removes the record batches the chain writer has chained (at or below its consumer's ack floor)
 * from `TOOLMESH_RECORDS`, once a second, in one purge: the stream then holds only the work not
 * yet done, as a work queue would, at one stored write a second instead of one a batch.
 */
export class RecordsTrim {
  private timer: NodeJS.Timeout | undefined;
  private trimming: Promise<number> | undefined;

  constructor(private readonly deps: { jsm: JetStreamManager; log: Logger }) {}

  start(): void {
    this.timer = setInterval(() => {
      this.trimming ??= this.trim().finally(() => {
        this.trimming = undefined;
      });
    }, TRIM_INTERVAL_MS);
    this.timer.unref();
  }

  /** One trim; resolves with the sequence kept from (0 when nothing was trimmed). */
  async trim(): Promise<number> {
    const { jsm, log } = this.deps;
    try {
      const consumer = await jsm.consumers.info(streamNames.records, AUDIT_CONSUMER);
      const floor = consumer.ack_floor.stream_seq;
      const { state } = await jsm.streams.info(streamNames.records);
      if (state.messages === 0 || floor < state.first_seq) return 0;
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
