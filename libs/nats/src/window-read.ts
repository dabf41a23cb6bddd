import type { NatsConnection } from "nats";
import { newInbox } from "./connect.js";

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

/** One message of a window, as a direct get returns it. */
export interface WindowMsg {
  subject: string;
  seq: number;
  /** When nats-server stored it, ms since epoch. */
  timeMs: number;
  data: Uint8Array;
}

/** What readWindow reads: a stream's messages on a subject, stored from a time on. */
export interface WindowRead {
  nc: NatsConnection;
  /** A stream with `allow_direct` (streamDefinitions gives it to the ones read this way). */
  stream: string;
  /** The subject read; wildcards allowed (one shard of every source: `toolmesh.trace.*.ab`). */
  subject: string;
  /** The first message read is the first stored at or after this time (ms since epoch). */
  fromMs: number;
  /** Stop at the first message stored after this time; unset reads to the stream's end. */
  untilMs?: number;
  /** Called for each message in stream order; true stops the read. */
  visit: (msg: WindowMsg) => boolean;
  /** Messages asked for at a time. */
  batch?: number;
  /** How long one batch may take to arrive in full. */
  timeoutMs?: number;
}

/** A window read that could not bring every message it asked for (retry it). */
export class WindowReadError extends Error {
  override name = "WindowReadError";
}

/**
 * Reads the messages of a stretch of time on a subject: the way to find one trace's or one
 * call's records in a shard. Batched direct gets (nats-server 2.11+): nats-server finds the start
 * by time and steps from message to message of the subject, so a read costs what the stretch
 * holds on that subject — no consumer is made, and nothing is counted over the rest of the
 * stream, so an old call costs what a new one does. The read ends at `untilMs` or at the last
 * message stored when its last batch was asked for. Returns how many messages were visited.
 */
export async function readWindow(read: WindowRead): Promise<number> {
  const batch = read.batch ?? 256;
  const upTo =
    read.untilMs === undefined ? {} : { up_to_time: new Date(read.untilMs).toISOString() };
  let from: Record<string, unknown> = {
    start_time: new Date(Math.max(0, read.fromMs)).toISOString(),
  };
  let visited = 0;
  for (;;) {
    const got = await directBatch(
      read,
      { ...from, next_by_subj: read.subject, batch, ...upTo },
      read.timeoutMs ?? 5000,
    );
    for (const msg of got.messages) {
      if (read.untilMs !== undefined && msg.timeMs > read.untilMs) return visited;
      visited++;
      if (read.visit(msg)) return visited;
    }
    if (got.done) return visited;
    from = { seq: got.lastSeq + 1 };
  }
}

/** One batched direct get: its messages, and whether the stream holds more that match. */
function directBatch(
  read: WindowRead,
  request: Record<string, unknown>,
  timeoutMs: number,
): Promise<{ messages: WindowMsg[]; done: boolean; lastSeq: number }> {
  const { nc, stream } = read;
  // Under the connection's own inbox prefix: a service may read only its own replies.
  const inbox = newInbox(nc);
  const messages: WindowMsg[] = [];
  return new Promise((resolve, reject) => {
    const finish = () => {
      sub.unsubscribe();
      clearTimeout(timer);
    };
    const fail = (why: string) => {
      finish();
      reject(new WindowReadError(`reading ${stream} (${read.subject}) ${why}; retry`));
    };
    const sub = nc.subscribe(inbox, {
      callback: (error, msg) => {
        if (error) return fail(`failed: ${error.message}`);
        const headers = msg.headers;
        const code = headers?.code ?? 0;
        if (code === 0 && headers) {
          messages.push({
            subject: headers.get("Nats-Subject"),
            seq: Number(headers.get("Nats-Sequence")),
            timeMs: Date.parse(headers.get("Nats-Time-Stamp")),
            data: msg.data,
          });
          return;
        }
        finish();
        // 204: the end of this batch, with how many matching messages follow it; 404: none (more).
        if (code === 204) {
          const pending = Number(headers?.get("Nats-Num-Pending") || 0);
          const lastSeq = Number(headers?.get("Nats-Last-Sequence") || 0);
          resolve({ messages, done: pending === 0 || messages.length === 0, lastSeq });
        } else if (code === 404) {
          resolve({ messages, done: true, lastSeq: 0 });
        } else {
          reject(
            new WindowReadError(
              `reading ${stream} (${read.subject}) was refused: ${code} ${headers?.description ?? ""}`,
            ),
          );
        }
      },
    });
    const timer = setTimeout(
      () => fail(`got ${messages.length} messages and no end within ${timeoutMs} ms`),
      timeoutMs,
    );
    nc.publish(`$JS.API.DIRECT.GET.${stream}`, JSON.stringify(request), { reply: inbox });
  });
}
