import type { JetStreamManager } from "nats";

/** The durable consumers that follow the chain's records, by the stream they read. */
export const CONSUMERS = [
  { service: "audit", stream: "TOOLMESH_AUDIT", durable: "audit" },
  { service: "callback", stream: "TOOLMESH_OUTCOME", durable: "callback" },
  { service: "memory-writer", stream: "TOOLMESH_CALLBACK", durable: "memory-writer" },
] as const;

export interface ConsumerLag {
  service: string;
  /** Messages not yet delivered or not yet acked when the load stopped. */
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
