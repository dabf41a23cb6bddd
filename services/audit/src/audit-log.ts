import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { subjectToken } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, type CallStatus } from "@toolmesh/proto";
import {
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "nats";

/** The stream the Audit service owns: chained records, one subject per agent and tool. */
export const AUDIT_LOG_STREAM = "TOOLMESH_AUDIT_LOG";

/** Where a stored record lives. */
export function auditLogSubject(agentId: string, tool: string): string {
  return `toolmesh.auditlog.${subjectToken(agentId)}.${subjectToken(tool)}`;
}

/** The log stream's definition; maxAgeMs 0 keeps records until deleted. */
export function auditLogStream(settings: {
  replicas: number;
  maxAgeMs: number;
}): Partial<StreamConfig> {
  return {
    name: AUDIT_LOG_STREAM,
    subjects: ["toolmesh.auditlog.>"],
    description: "The hash-chained access log written by the Audit service",
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: settings.replicas,
    max_age: nanos(settings.maxAgeMs),
    duplicate_window: nanos(2 * 60 * 1000),
    deny_delete: true,
    deny_purge: true,
  };
}

/** What QueryRecords filters on; empty fields match everything. */
export interface RecordFilter {
  agentId: string;
  userId: string;
  tool: string;
  status: CallStatus;
  traceId: string;
  callId: string;
  /** Inclusive, ms since epoch; undefined for no bound. */
  startMs: number | undefined;
  /** Exclusive. */
  endMs: number | undefined;
}

interface Indexed {
  record: AuditRecord;
  timeMs: number;
}

/**
 * The stored log in memory, in sequence order, fed by an ordered consumer on the log stream, so
 * it also sees records written by other Audit instances. Rebuilt from the stream at start.
 */
export class AuditLog {
  private readonly entries: Indexed[] = [];
  private readonly ids = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private stopped = false;
  private stopConsumer: (() => void) | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    private readonly maxAgeMs: number,
  ) {}

  /** Loads every retained record; resolves once the index has caught up with the stream. */
  async start(): Promise<void> {
    const info = await this.jsm.streams.info(AUDIT_LOG_STREAM);
    const target = info.state.last_seq;
    const consumer = await this.js.consumers.get(AUDIT_LOG_STREAM);
    const messages = await consumer.consume();
    this.stopConsumer = () => void messages.close();
    let caughtUp: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      caughtUp = resolve;
    });
    if (info.state.messages === 0) caughtUp();
    void (async () => {
      for await (const msg of messages) {
        try {
          this.add(fromBinary(AuditRecordSchema, msg.data), msg.info.timestampNanos);
        } catch (error) {
          this.log.error({ err: error, seq: msg.seq }, "undecodable record in the audit log");
        }
        if (msg.seq >= target) caughtUp();
      }
    })();
    await ready;
  }

  private add(record: AuditRecord, storedNanos: number): void {
    const timeMs = record.time ? timestampMs(record.time) : storedNanos / 1e6;
    this.entries.push({ record, timeMs });
    this.ids.add(record.id);
    this.expire();
    for (const listener of this.listeners) listener();
  }

  /** Drops records the stream no longer retains (by age), so queries match the stream. */
  private expire(): void {
    if (this.maxAgeMs <= 0) return;
    const cutoff = Date.now() - this.maxAgeMs;
    let drop = 0;
    while (drop < this.entries.length && (this.entries[drop] as Indexed).timeMs < cutoff) drop++;
    if (drop > 0) {
      for (const e of this.entries.splice(0, drop)) this.ids.delete(e.record.id);
    }
  }

  /** True when a record with this source id is already stored. */
  has(id: string): boolean {
    return this.ids.has(id);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Resolves once the index holds a record with this sequence. */
  waitForSequence(sequence: bigint, timeoutMs = 5000): Promise<void> {
    const reached = () => {
      const last = this.entries.at(-1);
      return last !== undefined && last.record.sequence >= sequence;
    };
    if (reached()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const listener = () => {
        if (reached()) {
          this.listeners.delete(listener);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`audit log index did not reach sequence ${sequence}`));
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }

  /**
   * Records matching the filter, newest first, starting below `beforeSequence` (exclusive; 0n
   * for the newest). Returns at most `limit` records and whether more remain.
   */
  query(
    filter: RecordFilter,
    beforeSequence: bigint,
    limit: number,
  ): { records: AuditRecord[]; more: boolean } {
    const records: AuditRecord[] = [];
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const { record, timeMs } = this.entries[i] as Indexed;
      if (beforeSequence > 0n && record.sequence >= beforeSequence) continue;
      if (!matches(record, timeMs, filter)) continue;
      if (records.length === limit) return { records, more: true };
      records.push(record);
    }
    return { records, more: false };
  }

  /** Records from a sequence on (0n: all retained), in order. */
  *from(sequence: bigint): Iterable<AuditRecord> {
    for (const { record } of this.entries) {
      if (record.sequence >= sequence) yield record;
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.stopConsumer?.();
  }
}

function matches(record: AuditRecord, timeMs: number, f: RecordFilter): boolean {
  return (
    (f.agentId === "" || record.agentId === f.agentId) &&
    (f.userId === "" || record.userId === f.userId) &&
    (f.tool === "" || record.tool === f.tool) &&
    (f.status === 0 || record.status === f.status) &&
    (f.traceId === "" || record.traceId === f.traceId) &&
    (f.callId === "" || record.callId === f.callId) &&
    (f.startMs === undefined || timeMs >= f.startMs) &&
    (f.endMs === undefined || timeMs < f.endMs)
  );
}
