import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { createSecretRedactor } from "@toolmesh/log";
import { RecordWriteError } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  type BackendEvent,
  BackendEventSchema,
  CacheUse,
  CallStatus,
  type Cost,
  type TraceEventKind,
} from "@toolmesh/proto";
import type { CallEnd } from "./call-end.js";
import {
  type CallIdentity,
  type CallRecordFields,
  encodeCallRecord,
  SOURCE,
} from "./record-encoding.js";

/**
 * Where the Dispatcher's records go: the record stream, through a group-committing writer (a
 * RecordWriter in production, memory in tests). `write` resolves once the record is stored.
 */
export interface RecordSink {
  write(record: Uint8Array): Promise<void>;
  /** False while NATS is unreachable: nothing could be recorded, so nothing may run. */
  readonly writable: boolean;
  /** Why the record stream has no room now (its consumers are behind), or undefined. */
  readonly full: string | undefined;
  /** The largest message the bus carries; a record must fit in it. */
  readonly maxPayload: number;
}

/**
 * Writes the records of calls: a call is written once, as a start record (before a tool with
 * side effects runs) and an end record (before its answer), plus a refusal or the records of a
 * held call. Everything else — the audit chain, the trace, the outcome and its broadcast, usage,
 * memory — is derived from them by the services that own those views.
 */
export class CallRecorder {
  private readonly redact: (value: unknown) => unknown;

  constructor(
    private readonly sink: RecordSink,
    /** Key patterns redacted on top of the defaults of @toolmesh/log. */
    secretKeyPatterns: readonly string[],
    /** This process's instance id, named in each start record for the sweeper. */
    readonly instance: string,
    /**
     * How long a read-only call's start record waits for its end, to be written with it as one
     * record (TOOLMESH_START_LINGER_MS); 0 writes every start at once.
     */
    private readonly startLingerMs = 0,
  ) {
    this.redact = createSecretRedactor(secretKeyPatterns);
  }

  begin(call: CallIdentity): CallRecord {
    return new CallRecord(this.sink, this.instance, call, this.redact, this.startLingerMs);
  }

  /** The largest message the bus carries; records must fit in it. */
  get maxPayload(): number {
    return this.sink.maxPayload;
  }

  /** False while NATS is unreachable: nothing could be recorded, so nothing may run. */
  get writable(): boolean {
    return this.sink.writable;
  }

  /** Why the record store has no room now, or undefined. */
  get full(): string | undefined {
    return this.sink.full;
  }

  /**
   * The record of a circuit breaker opening (a tool's, or an instance's): not a call's, so it has
   * an id of its own. Resolves once stored.
   */
  circuitOpened(opened: {
    id: string;
    tool: string;
    toolInstance: string;
    reason: string;
    errorCode: string;
    errorMessage: string;
    failedCalls: string[];
  }): Promise<void> {
    return this.sink.write(
      toBinary(
        AuditRecordSchema,
        create(AuditRecordSchema, {
          id: opened.id,
          time: timestampNow(),
          action: AuditAction.CIRCUIT_OPENED,
          source: SOURCE,
          tool: opened.tool,
          agentId: SOURCE,
          status: CallStatus.FAILURE,
          reason: opened.reason,
          errorCode: opened.errorCode,
          errorMessage: opened.errorMessage,
          failedCalls: opened.failedCalls,
          toolInstance: opened.toolInstance,
          instance: this.instance,
        }),
      ),
    );
  }
}

/** Room kept in a bus message beyond one record: the batch's framing and its headers. */
const BATCH_ROOM_BYTES = 8 * 1024;

/** A start record held back for its end (CallRecord.start with `linger`). */
interface HeldStart {
  fields: CallRecordFields;
  timer: NodeJS.Timeout;
  settle: { resolve: () => void; reject: (error: unknown) => void };
}

/** The records of one call; flush() resolves once every one written so far is stored. */
export class CallRecord {
  private readonly pending: Promise<void>[] = [];
  /** The tool's own events and attempts, carried by the end record. */
  private readonly events: BackendEvent[] = [];
  /** The start record's write (alone, or with the end): the end record follows it. */
  private started: Promise<void> | undefined;
  /** A start record not written yet: it goes with the end record if that comes in time. */
  private held: HeldStart | undefined;
  /** How its start record went, once written: alone (stored, or not) or with the end record. */
  private startWent: "alone" | "alone-refused" | "with-end" | undefined;

  constructor(
    private readonly sink: RecordSink,
    private readonly instance: string,
    readonly call: CallIdentity,
    private readonly redact: (value: unknown) => unknown,
    private readonly lingerMs = 0,
  ) {}

  /**
   * The start record: the call's arguments, deadline and this Dispatcher instance, which a
   * sweeper closes the call from if this process vanishes. Resolves once stored; the chain waits
   * for that before a tool with side effects runs.
   *
   * With `linger` (a read-only call) the start waits up to the recorder's linger for the end and
   * is written with it as one record — one write and one fsync for the call instead of two in
   * turn. Its only effect on the world is its answer, which goes out only once that record is
   * stored; a call still running after the linger has its start written alone, so it shows as
   * running and the sweeper closes it if this process vanishes.
   */
  start(
    run: {
      args: JsonObject;
      timeoutMs: number;
      runtime: string;
      startedMs: number;
      deadlineMs: number;
    },
    options: { linger?: boolean } = {},
  ): Promise<void> {
    const fields: CallRecordFields = {
      action: AuditAction.TOOL_START,
      time: timestampFromMs(run.startedMs),
      arguments: this.redacted(run.args),
      instance: this.instance,
      deadline: timestampFromMs(run.deadlineMs),
      timeoutMs: run.timeoutMs,
      runtime: run.runtime,
    };
    if (!options.linger || this.lingerMs <= 0) {
      this.started = this.writeStartAlone(fields);
      return this.started;
    }
    let settle: HeldStart["settle"] = { resolve: () => {}, reject: () => {} };
    const started = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    started.catch(() => {});
    const timer = setTimeout(() => this.writeHeldStart(), this.lingerMs);
    this.held = { fields, timer, settle };
    this.started = started;
    return started;
  }

  /** Writes a held start record alone (its linger is over, or it cannot go with its end). */
  private writeHeldStart(): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    clearTimeout(held.timer);
    this.writeStartAlone(held.fields).then(held.settle.resolve, held.settle.reject);
  }

  private writeStartAlone(fields: CallRecordFields): Promise<void> {
    this.startWent = "alone";
    const stored = this.write(fields);
    stored.catch((error: unknown) => {
      // Refused or full: nothing was stored. Otherwise it may be, later (it is sent again).
      if (error instanceof RecordWriteError && error.failure !== "unknown")
        this.startWent = "alone-refused";
    });
    return stored;
  }

  /**
   * True when the call's start record was written alone and is, or may yet be, stored: a call
   * whose end then fails is closed by the sweeper from it. False when the start went with the
   * end record (one write, which failed) or was refused: the call has no record but that write.
   */
  get startMayBeStored(): boolean {
    return this.startWent === "alone";
  }

  /** One of the tool's own events (or an attempt), kept for the end record; secrets redacted. */
  trace(
    kind: TraceEventKind,
    payload: JsonObject,
    options: { customKind?: string; timeMs?: number } = {},
  ): void {
    this.events.push(
      create(BackendEventSchema, {
        kind,
        customKind: options.customKind ?? "",
        payload: this.redacted(payload),
        time: options.timeMs ? timestampFromMs(options.timeMs) : timestampNow(),
      }),
    );
  }

  /** A value as every record of the call shows it: secrets redacted. */
  redacted(value: JsonObject): JsonObject {
    return this.redact(value) as JsonObject;
  }

  /** The record of a call refused before its tool ran. */
  refused(
    refusal: { code: string; message: string; reason: string },
    args: JsonObject | undefined,
    durationMs: number,
  ): void {
    void this.write({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
      errorCode: refusal.code,
      errorMessage: refusal.message,
      reason: refusal.reason,
      durationMs,
      arguments: args ? this.redacted(args) : undefined,
    });
  }

  /**
   * The end record of a call that ran: its status, output or error, attempts and the tool's own
   * events — the one fact every view of the call (audit, trace, outcome, broadcast) reads.
   * It follows its start record's ack, so a call's records never tell two stories: an end without
   * its start is never stored, and one whose start failed is never written (this rejects with the
   * start's error). A start still held is written with it, as one record.
   */
  finished(
    end: CallEnd,
    run: {
      args: JsonObject;
      attempts: number;
      startedMs: number;
      finishedMs: number;
      /** How the tool's result cache took part, and the call a hit repeats. */
      cache?: CacheUse;
      cachedFrom?: string;
      cost?: Cost | undefined;
      /** The budgets the cost counts against; the record then names this instance as counting it. */
      budgets?: string[];
    },
  ): Promise<void> {
    const budgets = run.budgets ?? [];
    const fields: CallRecordFields = {
      cache: run.cache ?? CacheUse.UNSPECIFIED,
      cachedFrom: run.cachedFrom ?? "",
      ...(run.cost ? { cost: run.cost } : {}),
      budgets,
      countedBy: budgets.length > 0 ? this.instance : "",
      action: AuditAction.TOOL_CALL,
      time: timestampFromMs(run.finishedMs),
      startedAt: timestampFromMs(run.startedMs),
      status: end.status,
      output: end.output,
      errorCode: end.error?.code ?? "",
      errorMessage: end.error?.message ?? "",
      errorDetails: end.error?.details,
      reason: end.reason,
      durationMs: run.finishedMs - run.startedMs,
      attempts: run.attempts,
      events: this.events.splice(0),
    };
    const held = this.held;
    if (held) {
      // The start's own fields (arguments, instance, deadline, timeout, runtime) ride on the end.
      const { action: _action, time: _time, ...start } = held.fields;
      const together = this.encode({ ...fields, ...start });
      // Arguments and output each fit a record; both together may not fit a bus message.
      if (together.length <= this.sink.maxPayload - BATCH_ROOM_BYTES) {
        this.held = undefined;
        clearTimeout(held.timer);
        this.startWent = "with-end";
        const stored = this.store(together);
        stored.then(held.settle.resolve, held.settle.reject);
        return stored;
      }
      this.writeHeldStart();
    }
    const bytes = this.encode(fields);
    const stored = (this.started ?? Promise.resolve()).then(() => this.sink.write(bytes));
    this.track(stored);
    return stored;
  }

  /** Writes a record of this call (an approval's, a held call's end); resolves once stored. */
  write(fields: CallRecordFields): Promise<void> {
    return this.store(this.encode(fields));
  }

  private encode(fields: CallRecordFields): Uint8Array {
    return encodeCallRecord(this.call, fields);
  }

  private store(bytes: Uint8Array): Promise<void> {
    const stored = this.sink.write(bytes);
    this.track(stored);
    return stored;
  }

  /** Resolves once every record written so far is stored; rejects if any write failed. */
  async flush(): Promise<void> {
    await Promise.all(this.pending);
  }

  private track(stored: Promise<void>): void {
    // Rejections are reported by flush(); this keeps an early one from being "unhandled".
    stored.catch(() => {});
    this.pending.push(stored);
  }
}
