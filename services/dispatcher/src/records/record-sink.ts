import { fromBinary } from "@bufbuild/protobuf";
import {
  type JetStreamPublisher,
  PublishError,
  type RecordWriteError,
  RecordWriter,
  subjects,
} from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, RecordBatchSchema } from "@toolmesh/proto";
import { encodeRecords } from "@toolmesh/records";
import type { RecordSink } from "./call-recorder.js";
import type { StoreCapacity } from "./store-capacity.js";

/** Room kept in a batch message for its headers. */
const HEADER_ROOM = 4096;

/** How records are written to the record stream. */
export interface RecordStreamSettings {
  /** Batches in flight at once; more records wait and go together (group commit). */
  maxInFlight: number;
  /** How long a batch whose ack was lost is sent again before its calls are told "unknown". */
  retryForMs: number;
}

/**
 * The Dispatcher's records on the record stream (TOOLMESH_RECORDS): records of concurrent calls
 * share one batch message and its fsync (RecordWriter), under this instance's message ids.
 */
export class JetStreamRecords implements RecordSink {
  private readonly writer: RecordWriter;

  constructor(
    private readonly publisher: JetStreamPublisher,
    instance: string,
    settings: RecordStreamSettings,
    private readonly capacity: StoreCapacity,
    onRetry: (attempt: number, error: unknown) => void,
  ) {
    this.writer = new RecordWriter(publisher, {
      subject: subjects.records("dispatcher"),
      type: RecordBatchSchema.typeName,
      msgIdPrefix: `dispatcher-${instance}`,
      encode: encodeRecords,
      maxBatchBytes: Math.max(64 * 1024, publisher.maxPayload - HEADER_ROOM),
      maxInFlight: settings.maxInFlight,
      retryForMs: settings.retryForMs,
      onRetry,
      classify: (error) => {
        if (!(error instanceof PublishError)) return "maybe";
        if (error.failure === "full") return "full";
        if (error.failure === "no-stream" || error.failure === "refused") return "refused";
        return "maybe";
      },
    });
  }

  write(record: Uint8Array): Promise<void> {
    return this.writer.write(record);
  }

  get writable(): boolean {
    return this.publisher.writable;
  }

  get full(): string | undefined {
    return this.capacity.full;
  }

  get maxPayload(): number {
    return this.publisher.maxPayload;
  }

  /** Records written and not yet stored. */
  get backlog(): number {
    return this.writer.backlog;
  }

  close(): void {
    this.writer.close();
  }
}

/**
 * Keeps every record in memory, in write order, and stores each at once: the Dispatcher's
 * records without JetStream, for in-process tests. A test sets `writable`, `full`, `maxPayload`
 * or `failure` to play a bus that is down, full or refusing.
 */
export class MemoryRecords implements RecordSink {
  readonly records: AuditRecord[] = [];
  writable = true;
  maxPayload = 1024 * 1024;
  full: string | undefined;
  /** When set, every write fails with it (the bus is down or full). */
  failure: RecordWriteError | undefined;
  /** Hears each record stored, so a test awaits one instead of polling. */
  onStored: ((record: AuditRecord) => void) | undefined;

  async write(record: Uint8Array): Promise<void> {
    if (this.failure) throw this.failure;
    const stored = fromBinary(AuditRecordSchema, record);
    this.records.push(stored);
    this.onStored?.(stored);
  }
}
