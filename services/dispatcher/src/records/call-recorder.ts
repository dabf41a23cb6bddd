import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { createSecretRedactor } from "@toolmesh/log";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  type BackendEvent,
  BackendEventSchema,
  CacheUse,
  CallStatus,
  type Cost,
  type Principal,
  type TraceEventKind,
} from "@toolmesh/proto";
import type { CallEnd } from "./call-end.js";

const SOURCE = "dispatcher";

/** The ids and caller of one call, shared by all its records. */
export interface CallIdentity {
  traceId: string;
  callId: string;
  parentId: string;
  tool: string;
  principal: Principal;
}

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

/** The fields a record of a call sets; the call's ids and caller come from the call. */
export type CallRecordFields = Partial<
  Omit<
    AuditRecord,
    "$typeName" | "callId" | "traceId" | "parentId" | "tool" | "agentId" | "userId" | "roles"
  >
> & { action: AuditAction };

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
  ) {
    this.redact = createSecretRedactor(secretKeyPatterns);
  }

  begin(call: CallIdentity): CallRecord {
    return new CallRecord(this.sink, this.instance, call, this.redact);
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

/** The records of one call; flush() resolves once every one written so far is stored. */
export class CallRecord {
  private readonly pending: Promise<void>[] = [];
  /** The tool's own events and attempts, carried by the end record. */
  private readonly events: BackendEvent[] = [];

  constructor(
    private readonly sink: RecordSink,
    private readonly instance: string,
    readonly call: CallIdentity,
    private readonly redact: (value: unknown) => unknown,
  ) {}

  /**
   * The start record: the call's arguments, deadline and this Dispatcher instance, which a
   * sweeper closes the call from if this process vanishes. Resolves once stored; the chain waits
   * for that before a tool with side effects runs.
   */
  start(run: {
    args: JsonObject;
    timeoutMs: number;
    runtime: string;
    startedMs: number;
    deadlineMs: number;
  }): Promise<void> {
    return this.write({
      action: AuditAction.TOOL_START,
      time: timestampFromMs(run.startedMs),
      arguments: this.redacted(run.args),
      instance: this.instance,
      deadline: timestampFromMs(run.deadlineMs),
      timeoutMs: run.timeoutMs,
      runtime: run.runtime,
    });
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
    return this.write({
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
    });
  }

  /** Writes a record of this call (an approval's, a held call's end); resolves once stored. */
  write(fields: CallRecordFields): Promise<void> {
    const c = this.call;
    const record = create(AuditRecordSchema, {
      time: timestampNow(),
      source: SOURCE,
      ...fields,
      tool: c.tool,
      agentId: c.principal.agentId,
      userId: c.principal.userId,
      roles: c.principal.roles,
      callId: c.callId,
      traceId: c.traceId,
      parentId: c.parentId,
    });
    const stored = this.sink.write(toBinary(AuditRecordSchema, record));
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
