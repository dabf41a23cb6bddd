import { randomUUID } from "node:crypto";
import {
  AckPolicy,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
} from "nats";

/**
 * Shards of an id (a trace's, a call's): records are filed under one of them, not under the id.
 * nats-server holds every distinct subject of a stream in memory for as long as the stream keeps
 * a message on it (about 275 bytes each, measured with nats-server 2.15), so a subject per trace
 * or per call made its memory grow with history; 256 shards a publisher is a fixed cost.
 */
export const ID_SHARDS = 256;

/** An id's shard: two hex digits of its FNV-1a hash. */
export function idShard(id: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return ((hash >>> 0) % ID_SHARDS).toString(16).padStart(2, "0");
}

/** What readWindow reads: a stream's messages on some subjects, stored from a time on. */
export interface WindowRead {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  filterSubjects: string[];
  /** The first message read is the first stored at or after this time (ms since epoch). */
  fromMs: number;
  /** Stop at the first message stored after this time; unset reads to the stream's end. */
  untilMs?: number;
  /** Called for each message in stream order; true stops the read. */
  visit: (msg: JsMsg) => boolean;
  /** Messages fetched at a time. */
  batch?: number;
}

/** A window read that could not bring every message it counted (retry it). */
export class WindowReadError extends Error {
  override name = "WindowReadError";
}

/**
 * Reads the messages of a stretch of time on a few subjects: the way to find one trace's or
 * one call's records in a shard. nats-server finds the start by time and filters by subject, and
 * the read ends at the last message that existed when it began (or at `untilMs`), so it never
 * waits for messages that will not come and costs what the stretch holds, not the stream.
 * Returns how many messages were visited.
 */
export async function readWindow(read: WindowRead): Promise<number> {
  const { js, jsm, stream } = read;
  const name = `window-${randomUUID()}`;
  const info = await jsm.consumers.add(stream, {
    name,
    filter_subjects: read.filterSubjects,
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(Math.max(0, read.fromMs)).toISOString(),
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    // A reader that dies mid-read leaves nothing behind for long.
    inactive_threshold: nanos(30_000),
  });
  let visited = 0;
  try {
    let remaining = info.num_pending;
    const consumer = await js.consumers.get(stream, name);
    while (remaining > 0) {
      const messages = await consumer.fetch({
        max_messages: Math.min(remaining, read.batch ?? 512),
        expires: 5000,
      });
      let received = 0;
      let done = false;
      for await (const msg of messages) {
        received++;
        remaining--;
        if (read.untilMs !== undefined && msg.info.timestampNanos / 1e6 > read.untilMs) {
          done = true;
          break;
        }
        visited++;
        if (read.visit(msg) || remaining === 0) {
          done = true;
          break;
        }
      }
      if (done) break;
      // The consumer counted these messages when it was made; a fetch that brings none of them
      // (a leader change, a lost connection) is a read that failed, never the end of the window:
      // a caller that took it for one would miss a record it asked about.
      if (received === 0)
        throw new WindowReadError(
          `reading ${stream} stopped with ${remaining} of ${info.num_pending} messages unread; retry`,
        );
    }
    return visited;
  } finally {
    await jsm.consumers.delete(stream, name).catch(() => {});
  }
}
