import type { AuditRecord } from "@toolmesh/proto";
import type { JetStreamManager, StreamState } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import { firstRecord, lastRecord } from "./log-block.js";

/** The oldest and newest records the log stream keeps; undefined when it keeps none. */
export interface ChainEnds {
  first: AuditRecord | undefined;
  last: AuditRecord | undefined;
  /** Records kept: from the first record's sequence to the last's. */
  records: number;
}

/**
 * Reads the first record of the stream's first message and the last record of its last: a
 * stream sequence counts messages (blocks), these count records.
 */
export async function readChainEnds(
  jsm: JetStreamManager,
  state: Pick<StreamState, "first_seq" | "last_seq" | "messages">,
): Promise<ChainEnds> {
  if (state.messages === 0) return { first: undefined, last: undefined, records: 0 };
  const [head, tail] = await Promise.all([
    jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: state.first_seq }),
    jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: state.last_seq }),
  ]);
  const first = firstRecord(head.header, head.data);
  const last = lastRecord(tail.header, tail.data);
  const records = first && last ? Number(last.sequence - first.sequence) + 1 : 0;
  return { first, last, records: Math.max(records, 0) };
}
