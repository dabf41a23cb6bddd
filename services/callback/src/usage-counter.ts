import type { Logger } from "@toolmesh/log";
import { statusWord } from "@toolmesh/proto";
import type { LogBlock } from "@toolmesh/records";
import { counter } from "@toolmesh/telemetry";
import { spendOf } from "./spend.js";
import { type CountedBlock, type CountedCall, type UsageStore, usageKeyOf } from "./usage-store.js";

/**
 * How long counted blocks gather before their usage is written. Usage is hourly, so a second's
 * delay costs nothing, while writing each block's keys as it came would cost a KV write (an fsync)
 * per key per block.
 */
export const FLUSH_MS = 1000;
/** Blocks held at most before a write, well below the consumer's max ack pending. */
const FLUSH_BLOCKS = 256;

const usageMetrics = () => ({
  calls: counter(
    "toolmesh_usage_calls_total",
    "Finished calls counted into usage by this replica, by agent, tool and status (each call once across replicas)",
    ["agent", "tool", "status"],
  ),
  duration: counter(
    "toolmesh_usage_duration_seconds_total",
    "Execution time of the finished calls counted by this replica, by agent and tool",
    ["agent", "tool"],
  ),
});

/** A block of the audit log waiting for its usage: acked through `block` once written. */
export interface HeldBlock {
  /** The newest delivery of the block (a redelivery while held replaces it). */
  block: LogBlock;
  calls: CountedCall[];
}

/**
 * Counts the finished calls of audit log blocks into the hourly usage aggregates (and the cost of
 * those under budgets into the budgets' spend) and acks each
 * block once its calls are written. Blocks gather for a second (or FLUSH_BLOCKS), then each usage
 * key they touch is written once with the blocks it counted, so a block delivered again — after
 * a crash, a lost ack, or to another replica — adds nothing twice (usage-store.ts); a write that
 * fails is tried again each second, keeping the blocks in hand. Metrics count what this replica
 * added.
 */
export class UsageCounter {
  private held: HeldBlock[] = [];
  private writing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly metrics = usageMetrics();

  constructor(
    private readonly deps: {
      usage: UsageStore;
      /** The consumer's ack floor: every block at or below it was acked. */
      ackFloor(): Promise<number>;
      /** Told of each block acked, so its sequence leaves the feed's blocks in hand. */
      settled(seq: number): void;
      log: Logger;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  /** Takes a block whose broadcasts are stored; acks it once its calls are counted. */
  hold(held: HeldBlock): void {
    this.held.push(held);
    if (this.held.length >= FLUSH_BLOCKS) void this.flush();
  }

  /** Writes what is held, after any write before it. */
  private flush(): Promise<void> {
    if (this.held.length === 0) return this.writing;
    const batch = this.held;
    this.held = [];
    this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: HeldBlock[]): Promise<void> {
    const byKey = new Map<string, CountedBlock[]>();
    for (const { block, calls } of batch) {
      const ofBlock = new Map<string, CountedCall[]>();
      for (const call of calls) {
        const key = usageKeyOf(call);
        const list = ofBlock.get(key) ?? [];
        list.push(call);
        ofBlock.set(key, list);
      }
      for (const [key, list] of ofBlock) {
        const blocks = byKey.get(key) ?? [];
        blocks.push({ seq: block.seq, calls: list });
        byKey.set(key, blocks);
      }
    }
    const spend = spendOf(batch);
    for (;;) {
      try {
        const floor = await this.deps.ackFloor().catch(() => 0);
        const [added] = await Promise.all([
          Promise.all([...byKey].map(([key, blocks]) => this.deps.usage.add(key, blocks, floor))),
          Promise.all(
            [...spend].map(([key, { budget, blocks }]) =>
              this.deps.usage.addSpend(key, budget, blocks, floor),
            ),
          ),
        ]);
        for (const call of added.flat()) {
          this.metrics.calls.inc({
            agent: call.agentId,
            tool: call.tool,
            status: statusWord(call.status),
          });
          this.metrics.duration.inc(
            { agent: call.agentId, tool: call.tool },
            call.durationMs / 1000,
          );
        }
        break;
      } catch (error) {
        if (this.stopped) {
          // Not acked: the blocks come again, to this service's next start or another replica.
          this.deps.log.warn({ err: error, blocks: batch.length }, "usage not written at stop");
          return;
        }
        // Keys written already skip these blocks when tried again (they remember them).
        this.deps.log.warn({ err: error }, "could not write usage; retrying in a second");
        for (const { block } of batch) block.working();
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    for (const { block } of batch) {
      block.ack();
      this.deps.settled(block.seq);
    }
  }

  /** Writes what is held (one try), then stops. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopped = true;
    await this.flush();
  }
}
