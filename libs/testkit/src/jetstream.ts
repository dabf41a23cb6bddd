import type { JetStreamManager, JetStreamOptions } from "nats";
import { eventually } from "./eventually.js";

/**
 * JetStream options for tests: a test that publishes thousands of events at once on two loaded
 * cores, with fsync on every write, can wait longer than nats.js's 5 s default for an ack. Tests
 * assert on what arrives, not on how fast; benchmarks measure speed.
 */
export const TEST_JS_OPTIONS: JetStreamOptions = { timeout: 60_000 };

/** Resolves once a durable consumer has acked every message its stream holds (looked at every `intervalMs`). */
export async function consumerDrained(
  jsm: JetStreamManager,
  stream: string,
  durable: string,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<void> {
  await eventually(
    async () => {
      const { state } = await jsm.streams.info(stream);
      const consumer = await jsm.consumers.info(stream, durable);
      if (consumer.ack_floor.stream_seq < state.last_seq || consumer.num_ack_pending > 0) {
        throw new Error(
          `${durable} acked up to ${consumer.ack_floor.stream_seq} of ${state.last_seq} (${consumer.num_ack_pending} pending)`,
        );
      }
    },
    timeoutMs,
    `${durable} acking all of ${stream}`,
    intervalMs,
  );
}
