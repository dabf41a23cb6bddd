import type { NatsConnection } from "nats";
import { type LogWatch, watchLog } from "./log-watch.js";

/** What a test sees of the calls' records: the audit records, trace events and outcomes. */
export interface CallRecords {
  traces: LogWatch["traces"];
  audits: LogWatch["records"];
  outcomes: LogWatch["outcomes"];
}

/**
 * Follows the audit log and collects the records and the views derived from them (libs/records),
 * as Audit, Callback and memory-writer derive them.
 */
export function collectRecords(nc: NatsConnection): CallRecords {
  const { traces, records, outcomes } = watchLog(nc);
  return { traces, audits: records, outcomes };
}
