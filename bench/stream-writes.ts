import { bucketNames, busAccess, streamNames } from "@toolmesh/nats";
import type { JetStreamManager } from "nats";
import { readChainEnds } from "../services/audit/src/log-ends.js";

/** Every stream's counters at one moment, read from nats-server. */
export interface StreamCounters {
  /** Each stream's last sequence: the messages it ever stored (what a work queue removed too). */
  lastSeq: Record<string, number>;
  /** Each stream's bytes now. */
  bytes: Record<string, number>;
  /** The audit log's last chain sequence: the records ever chained. */
  chained: number;
}

/** What a run of calls wrote, per call: from two StreamCounters, with every consumer done. */
export interface CallWrites {
  calls: number;
  /**
   * Acked writes on a call's path: the messages stored in the streams the Dispatcher writes (its
   * record batches, and its buckets: heartbeats, idempotency keys …), a batch counted once.
   */
  pathWrites: number;
  /** Records chained into the audit log (a call's start and end, in the batches above). */
  records: number;
  /** Messages every stream stored (the consumers' writes included), by stream. */
  byStream: Record<string, number>;
  /** Bytes the audit log grew by. */
  logBytes: number;
}

/** The JetStream name of each stream the Dispatcher writes: its record stream and its buckets. */
export const DISPATCHER_STREAMS: readonly string[] = [
  ...busAccess.dispatcher.writesStreams.map((s) => streamNames[s]),
  ...busAccess.dispatcher.ownsBuckets.map((b) => `KV_${bucketNames[b]}`),
];

/** Reads every stream's last sequence and bytes, and the audit log's last chain sequence. */
export async function streamCounters(jsm: JetStreamManager): Promise<StreamCounters> {
  const lastSeq: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  for await (const info of jsm.streams.list()) {
    lastSeq[info.config.name] = info.state.last_seq;
    bytes[info.config.name] = info.state.bytes;
  }
  const log = await jsm.streams.info(streamNames.auditLog).catch(() => undefined);
  const ends = log ? await readChainEnds(jsm, log.state) : undefined;
  return { lastSeq, bytes, chained: Number(ends?.last?.sequence ?? 0n) };
}

/** What `calls` calls wrote between two readings. */
export function callWrites(
  before: StreamCounters,
  after: StreamCounters,
  calls: number,
): CallWrites {
  const per = (n: number) => n / Math.max(1, calls);
  const byStream: Record<string, number> = {};
  for (const [name, seq] of Object.entries(after.lastSeq)) {
    const stored = seq - (before.lastSeq[name] ?? 0);
    if (stored > 0) byStream[name] = per(stored);
  }
  return {
    calls,
    pathWrites: DISPATCHER_STREAMS.reduce((n, name) => n + (byStream[name] ?? 0), 0),
    records: per(after.chained - before.chained),
    byStream,
    logBytes: per(
      (after.bytes[streamNames.auditLog] ?? 0) - (before.bytes[streamNames.auditLog] ?? 0),
    ),
  };
}
