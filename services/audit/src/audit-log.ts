import { subjects } from "@toolmesh/nats";
import {
  DiscardPolicy,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
  type StreamState,
} from "nats";

/** The stream the Audit service owns: chained records, in blocks. */
export const AUDIT_LOG_STREAM = "TOOLMESH_AUDIT_LOG";

/**
 * The log stream's definition: the hot window of the audit log. It has no age limit; past
 * `maxBytes` (0: none) the oldest blocks leave it, and the chain writer appends only while the
 * blocks that would leave are archived and read by every durable consumer (log-room.ts), so none
 * is lost. Nobody may delete or purge a message: the log is the store of record.
 */
export function auditLogStream(settings: {
  replicas: number;
  maxBytes: number;
}): Partial<StreamConfig> {
  return {
    name: AUDIT_LOG_STREAM,
    subjects: [subjects.auditLog],
    description: "The hash-chained access log written by the Audit service",
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: settings.replicas,
    max_age: 0,
    max_bytes: settings.maxBytes > 0 ? settings.maxBytes : -1,
    duplicate_window: nanos(2 * 60 * 1000),
    deny_delete: true,
    deny_purge: true,
  };
}

/**
 * The oldest stream sequence the log stream holds, or the next one it will hold when it is
 * empty: every block below it has left the log (and is in the archive, if anywhere).
 */
export function logFirstSeq(
  state: Pick<StreamState, "first_seq" | "last_seq" | "messages">,
): number {
  return state.messages > 0 ? state.first_seq : state.last_seq + 1;
}

/** The size assumed of a log message while the log is empty: a block of a full batch. */
const EMPTY_LOG_MESSAGE_BYTES = 256 * 1024;

/**
 * How many log messages a reader of the whole log asks for at a time: about `bytes` of them, by
 * the stream's average message size, between 16 and `most`. A log of one-record messages is read
 * thousands at a time; one of blocks (up to max_payload each) a few dozen, so that reading it
 * does not buffer hundreds of megabytes.
 */
export function logReadBatch(
  state: Pick<StreamState, "bytes" | "messages">,
  most: number,
  bytes = 8 * 1024 * 1024,
): number {
  const average = state.messages > 0 ? state.bytes / state.messages : EMPTY_LOG_MESSAGE_BYTES;
  return Math.max(16, Math.min(most, Math.floor(bytes / Math.max(average, 1))));
}
