import { fromBinary } from "@bufbuild/protobuf";
import { streamNames } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  type CallbackEvent,
  type TraceEvent,
} from "@toolmesh/proto";
import { outcomeOf, recordSlices, traceEvents } from "@toolmesh/records";
import type { ConsumerMessages, NatsConnection } from "nats";
import { Collector } from "./eventually.js";

/** What a test sees of the audit log as blocks are appended: the records and their views. */
export interface LogWatch {
  /** Every record chained, in chain order. */
  records: Collector<AuditRecord>;
  /** The trace events the records derive (libs/records traceEvents), as they are chained. */
  traces: Collector<TraceEvent>;
  /** The outcomes the records state (libs/records outcomeOf), as they are chained. */
  outcomes: Collector<CallbackEvent>;
  stop(): void;
}

/**
 * Follows the audit log with an ordered consumer (what was stored, never an append the stream
 * refused): every view a service derives from the records — the audit records, a trace's events,
 * a call's outcomes — as a collector a test awaits.
 */
export function watchLog(nc: NatsConnection): LogWatch {
  const records = new Collector<AuditRecord>();
  const traces = new Collector<TraceEvent>();
  const outcomes = new Collector<CallbackEvent>();
  const byCall = new Map<string, AuditRecord[]>();
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  void (async () => {
    const consumer = await nc.jetstream().consumers.get(streamNames.auditLog);
    messages = await consumer.consume();
    if (stopped) await messages.close();
    for await (const msg of messages) {
      for (const data of recordSlices(msg.data)) {
        const record = fromBinary(AuditRecordSchema, data);
        records.push(record);
        const own = byCall.get(record.callId) ?? [];
        const before = traceEvents(own).length;
        own.push(record);
        byCall.set(record.callId, own);
        for (const event of traceEvents(own).slice(before)) traces.push(event);
        const outcome = outcomeOf(record);
        if (outcome) outcomes.push(outcome);
      }
    }
  })();
  return {
    records,
    traces,
    outcomes,
    stop: () => {
      stopped = true;
      void messages?.close();
    },
  };
}
