import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { streamNames, subjects } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  type TraceEvent,
  TraceEventSchema,
} from "@toolmesh/proto";
import { AckPolicy, DeliverPolicy, type JetStreamClient, type JetStreamManager, nanos } from "nats";
import type { RecordIndex } from "./record-index.js";

/** When a trace's calls ran, as its audit records tell. */
export interface TraceSpan {
  /** The earliest start of a recorded call (record time minus its duration), ms since epoch. */
  startMs: number;
  /** The latest record's time, ms since epoch. */
  endMs: number;
}

/** The span of a trace as the audit index knows it; undefined when it holds none of its records. */
export function indexedSpan(
  index: Pick<RecordIndex, "traceRecords">,
  traceId: string,
): TraceSpan | undefined {
  const found = index.traceRecords(traceId);
  if (!found) return undefined;
  let startMs = found.lastMs;
  for (const data of found.oldest) {
    const r: AuditRecord = fromBinary(AuditRecordSchema, data);
    if (r.time) startMs = Math.min(startMs, timestampMs(r.time) - r.durationMs);
  }
  return { startMs, endMs: found.lastMs };
}

export interface TraceReaderOptions {
  /** The trace's span from the audit index. */
  span: (traceId: string) => TraceSpan | undefined;
  /** Read from this long before the span: clocks of the publishers and nats-server differ. */
  leadMs?: number;
  /** Read this long past the span: Callback's events follow a call's last record. */
  tailMs?: number;
  /** A trace the index does not know yet is looked for among this recent stretch of events. */
  recentMs?: number;
  /** The most events one trace returns. */
  maxEvents?: number;
}

/**
 * Reads every event of one trace from the trace stream, in publication order. Events are filed
 * under a shard of their trace id (libs/nats subjects.trace), so the reader asks nats-server for
 * the shard's events from the trace's start, found in the audit index, to just past its last
 * record, and keeps the trace's own: the work is bounded by the trace's duration, never by the
 * stream's history.
 */
export class TraceReader {
  private readonly leadMs: number;
  private readonly tailMs: number;
  private readonly recentMs: number;
  private readonly maxEvents: number;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: TraceReaderOptions,
  ) {
    this.leadMs = options.leadMs ?? 10_000;
    this.tailMs = options.tailMs ?? 60_000;
    this.recentMs = options.recentMs ?? 10 * 60_000;
    this.maxEvents = options.maxEvents ?? 10_000;
  }

  /** The events of a trace; empty when the stream holds none. */
  async events(traceId: string): Promise<TraceEvent[]> {
    const now = Date.now();
    const span = this.options.span(traceId);
    const fromMs = span ? span.startMs - this.leadMs : now - this.recentMs;
    const untilMs = span ? span.endMs + this.tailMs : now;
    const name = `trace-${randomUUID()}`;
    const stream = streamNames.trace;
    const info = await this.jsm.consumers.add(stream, {
      name,
      filter_subject: subjects.traceEvents(traceId),
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: new Date(Math.max(0, fromMs)).toISOString(),
      ack_policy: AckPolicy.None,
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: nanos(30_000),
    });
    try {
      // The shard's events from the start time that existed when the consumer was made: the end
      // of the read, so it never waits for events that will not come.
      let remaining = info.num_pending;
      const consumer = await this.js.consumers.get(stream, name);
      const events: TraceEvent[] = [];
      while (remaining > 0 && events.length < this.maxEvents) {
        const batch = await consumer.fetch({
          max_messages: Math.min(remaining, 512),
          expires: 5000,
        });
        let received = 0;
        let past = false;
        for await (const msg of batch) {
          received++;
          remaining--;
          if (msg.info.timestampNanos / 1e6 > untilMs) past = true;
          const event = fromBinary(TraceEventSchema, msg.data);
          if (event.traceId === traceId) events.push(event);
          if (past || remaining === 0 || events.length >= this.maxEvents) break;
        }
        if (received === 0 || past) break;
      }
      return events;
    } finally {
      await this.jsm.consumers.delete(stream, name).catch(() => {});
    }
  }
}
