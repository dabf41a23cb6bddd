import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { readWindow, streamNames, subjects } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  type TraceEvent,
  TraceEventSchema,
} from "@toolmesh/proto";
import type { NatsConnection } from "nats";
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
    private readonly nc: NatsConnection,
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
    const events: TraceEvent[] = [];
    await readWindow({
      nc: this.nc,
      stream: streamNames.trace,
      subject: subjects.traceEvents(traceId),
      fromMs: span ? span.startMs - this.leadMs : now - this.recentMs,
      untilMs: span ? span.endMs + this.tailMs : undefined,
      visit: (msg) => {
        const event = fromBinary(TraceEventSchema, msg.data);
        if (event.traceId === traceId) events.push(event);
        return events.length >= this.maxEvents;
      },
    });
    return events;
  }
}
