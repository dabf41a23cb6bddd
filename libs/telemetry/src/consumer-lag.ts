import type { JetStreamManager } from "nats";
import { gauge } from "./metrics.js";

/**
 * Gauges of every durable consumer on `streams`, read from JetStream at each scrape: messages
 * not yet delivered to it and messages delivered but not acked. A consumer whose pending count
 * keeps growing is falling behind. The last call's streams win (one process, one set).
 */
export function watchConsumerLag(jsm: JetStreamManager, streams: string[]): void {
  watched = { jsm, streams };
  const read = async () => {
    const rows: { stream: string; consumer: string; pending: number; ackPending: number }[] = [];
    const current = watched;
    if (!current) return rows;
    for (const stream of current.streams) {
      try {
        for (const info of await current.jsm.consumers.list(stream).next()) {
          rows.push({
            stream,
            consumer: info.name,
            pending: info.num_pending,
            ackPending: info.num_ack_pending,
          });
        }
      } catch {
        // A stream that does not exist (yet), or NATS away: nothing to report this scrape.
      }
    }
    return rows;
  };
  gauge(
    "toolmesh_stream_consumer_pending_messages",
    "Messages of a stream not yet delivered to a durable consumer",
    ["stream", "consumer"],
    async function collect() {
      this.reset();
      for (const row of await read())
        this.set({ stream: row.stream, consumer: row.consumer }, row.pending);
    },
  );
  gauge(
    "toolmesh_stream_consumer_ack_pending_messages",
    "Messages delivered to a durable consumer and not acked yet",
    ["stream", "consumer"],
    async function collect() {
      this.reset();
      for (const row of await read())
        this.set({ stream: row.stream, consumer: row.consumer }, row.ackPending);
    },
  );
}

let watched: { jsm: JetStreamManager; streams: string[] } | undefined;
