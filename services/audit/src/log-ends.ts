import { JetStreamApiCodes, jetStreamErrorCode } from "@toolmesh/nats";
import type { AuditRecord } from "@toolmesh/proto";
import { firstRecord, lastRecord } from "@toolmesh/records";
import type { JetStreamManager, StreamState } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";

/** The oldest and newest records the log stream keeps; undefined when it keeps none. */
export interface ChainEnds {
  first: AuditRecord | undefined;
  last: AuditRecord | undefined;
  /** Records kept: from the first record's sequence to the last's. */
  records: number;
}

/** Reads of a first message that retention dropped meanwhile, before giving up. */
const ATTEMPTS = 5;

/**
 * Reads the first record of the stream's first message and the last record of its last: a
 * stream sequence counts messages (blocks), these count records. `state` is the stream state
 * just read; when retention drops the first message before it is read, the state is read again.
 */
export async function readChainEnds(
  jsm: JetStreamManager,
  state: Pick<StreamState, "first_seq" | "last_seq" | "messages">,
): Promise<ChainEnds> {
  for (let attempt = 1; ; attempt++) {
    if (state.messages === 0) return { first: undefined, last: undefined, records: 0 };
    try {
      const [head, tail] = await Promise.all([
        jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: state.first_seq }),
        jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: state.last_seq }),
      ]);
      const first = firstRecord(head.header, head.data);
      const last = lastRecord(tail.header, tail.data);
      const records = first && last ? Number(last.sequence - first.sequence) + 1 : 0;
      return { first, last, records: Math.max(records, 0) };
    } catch (error) {
      if (attempt === ATTEMPTS || jetStreamErrorCode(error) !== JetStreamApiCodes.NoMessageFound) {
        throw error;
      }
      ({ state } = await jsm.streams.info(AUDIT_LOG_STREAM));
    }
  }
}
