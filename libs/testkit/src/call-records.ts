import { decodeEvent } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  type Outcome,
  OutcomeSchema,
  type TraceEvent,
  TraceEventSchema,
} from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import { Collector } from "./eventually.js";

/** Every trace event, audit record and outcome the Dispatcher publishes, as a test sees them. */
export interface CallRecords {
  traces: Collector<TraceEvent>;
  audits: Collector<AuditRecord>;
  outcomes: Collector<Outcome>;
}

/** Subscribes to the trace, audit and outcome subjects and collects what arrives. */
export function collectRecords(nc: NatsConnection): CallRecords {
  const records: CallRecords = {
    traces: new Collector<TraceEvent>(),
    audits: new Collector<AuditRecord>(),
    outcomes: new Collector<Outcome>(),
  };
  for (const [subject, collector, schema] of [
    ["toolmesh.trace.>", records.traces, TraceEventSchema],
    ["toolmesh.audit.>", records.audits, AuditRecordSchema],
    ["toolmesh.outcome.>", records.outcomes, OutcomeSchema],
  ] as const) {
    const sub = nc.subscribe(subject);
    void (async () => {
      for await (const msg of sub) (collector as Collector<unknown>).push(decodeEvent(schema, msg));
    })();
  }
  return records;
}
