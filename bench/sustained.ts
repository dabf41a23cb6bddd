import { consumerDrained } from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { callConsumers } from "../test/history/backlogs.js";

/** The durable consumers that follow a call's records (test/history/backlogs.ts). */
export const CONSUMERS = callConsumers;

export interface ConsumerLag {
  service: string;
  /** Messages not yet acked when the load stopped: record batches for Audit, log blocks for the others. */
  lagAtEnd: number;
  /** Seconds from the end of the load until the consumer had acked everything. */
  drainSeconds: number;
}

/** Messages a durable has not yet acked: undelivered plus delivered and unacked. */
async function lagOf(jsm: JetStreamManager, stream: string, durable: string): Promise<number> {
  const info = await jsm.consumers.info(stream, durable);
  return info.num_pending + info.num_ack_pending;
}

/**
 * Runs `load` (a closed loop that ends by itself) and then measures, for each consumer, its lag
 * at the moment the load ended and how long it took to reach zero (up to `timeoutMs`).
 */
export async function lagAfter(
  jsm: JetStreamManager,
  load: () => Promise<void>,
  timeoutMs = 120_000,
): Promise<ConsumerLag[]> {
  await load();
  const ended = performance.now();
  const rows: ConsumerLag[] = [];
  for (const c of CONSUMERS)
    rows.push({
      service: c.service,
      lagAtEnd: await lagOf(jsm, c.stream, c.durable),
      drainSeconds: Number.NaN,
    });
  for (;;) {
    const left = rows.filter((r) => Number.isNaN(r.drainSeconds));
    if (left.length === 0 || performance.now() - ended > timeoutMs) break;
    for (const row of left) {
      const c = CONSUMERS.find((x) => x.service === row.service);
      if (c && (await lagOf(jsm, c.stream, c.durable)) === 0)
        row.drainSeconds = (performance.now() - ended) / 1000;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return rows;
}

/**
 * Resolves once every consumer has acked everything its stream holds: the records of the calls
 * made so far are chained, broadcast, counted and in memory. Audit first: the log the others
 * follow grows until the record stream is empty.
 */
export async function consumersDone(jsm: JetStreamManager, timeoutMs = 120_000): Promise<void> {
  for (const c of CONSUMERS) await consumerDrained(jsm, c.stream, c.durable, timeoutMs, 20);
}
