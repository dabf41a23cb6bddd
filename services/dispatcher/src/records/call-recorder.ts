import { randomUUID } from "node:crypto";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { createSecretRedactor } from "@toolmesh/log";
import { subjects } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  CallLeaseSchema,
  CallStatus,
  type Outcome,
  OutcomeSchema,
  type Principal,
  statusName,
  TraceEventKind,
  TraceEventSchema,
} from "@toolmesh/proto";
import type { CallEnd } from "./call-end.js";
import type { LeaseLedger } from "./call-leases.js";
import type { EventPublisher } from "./event-publisher.js";

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
 * Publishes the start record (lease and TOOL_EXECUTE), trace events, audit record and outcome of
 * calls to JetStream. Publishes are pipelined: each call fires them as they happen and awaits
 * every ack once, before replying.
 */
export class CallRecorder {
  private readonly redact: (value: unknown) => unknown;

  constructor(
    private readonly publisher: EventPublisher,
    /** Key patterns redacted on top of the defaults of @toolmesh/log. */
    secretKeyPatterns: readonly string[],
    private readonly leases: LeaseLedger,
  ) {
    this.redact = createSecretRedactor(secretKeyPatterns);
  }

  begin(call: CallIdentity): CallRecord {
    return new CallRecord(this.publisher, this.leases, call, this.redact);
  }

  /** The largest message the bus carries; records must fit in it. */
  get maxPayload(): number {
    return this.publisher.maxPayload;
  }

  /** False while NATS is unreachable: nothing could be recorded, so nothing may run. */
  get writable(): boolean {
    return this.publisher.writable;
  }

  /** Why the record store has no room now, or undefined. */
  get full(): string | undefined {
    return this.publisher.full;
  }
}

/** The records of one call; flush() resolves once JetStream acked every one of them. */
export class CallRecord {
  private sequence = 0;
  private readonly pending: Promise<unknown>[] = [];
  private leaseSequence: Promise<number> | undefined;

  constructor(
    private readonly publisher: EventPublisher,
    private readonly leases: LeaseLedger,
    readonly call: CallIdentity,
    private readonly redact: (value: unknown) => unknown,
  ) {}

  /**
   * The start record: the call's lease (which a sweeper closes if this process vanishes) and
   * its TOOL_EXECUTE event. Resolves once JetStream acked both; the chain waits for that before
   * a tool with side effects runs.
   */
  start(run: {
    args: JsonObject;
    timeoutMs: number;
    runtime: string;
    startedMs: number;
    deadlineMs: number;
  }): Promise<void> {
    const c = this.call;
    const lease = this.leases.open(
      create(CallLeaseSchema, {
        instance: this.leases.instance,
        callId: c.callId,
        traceId: c.traceId,
        parentId: c.parentId,
        tool: c.tool,
        agentId: c.principal.agentId,
        userId: c.principal.userId,
        roles: c.principal.roles,
        arguments: this.redact(run.args) as JsonObject,
        startedAt: timestampFromMs(run.startedMs),
        deadline: timestampFromMs(run.deadlineMs),
      }),
    );
    this.leaseSequence = lease;
    this.track(lease);
    const before = this.pending.length;
    this.trace(TraceEventKind.TOOL_EXECUTE, { timeout_ms: run.timeoutMs, runtime: run.runtime });
    return Promise.all([lease, ...this.pending.slice(before)]).then(() => {});
  }

  /** Deletes the lease once every record of the call is acked (call after flush()). */
  release(): void {
    void this.leaseSequence?.then(
      (sequence) => this.leases.release(sequence),
      () => {},
    );
  }

  /** Publishes one trace event on toolmesh.trace.<trace_id>. */
  trace(
    kind: TraceEventKind,
    payload: JsonObject,
    options: { customKind?: string; timeMs?: number } = {},
  ): void {
    const id = randomUUID();
    const c = this.call;
    const event = create(TraceEventSchema, {
      id,
      traceId: c.traceId,
      callId: c.callId,
      parentId: c.parentId,
      kind,
      customKind: options.customKind ?? "",
      tool: c.tool,
      agentId: c.principal.agentId,
      userId: c.principal.userId,
      time: options.timeMs ? timestampFromMs(options.timeMs) : timestampNow(),
      sequence: ++this.sequence,
      payload: this.redact(payload) as JsonObject,
      source: SOURCE,
    });
    this.track(
      this.publisher.publishMessage(
        subjects.trace("dispatcher", c.traceId),
        TraceEventSchema,
        event,
      ),
    );
  }

  /** A value as every record of the call shows it: secrets redacted. */
  redacted(value: JsonObject): JsonObject {
    return this.redact(value) as JsonObject;
  }

  /**
   * Publishes the audit record on toolmesh.audit.<agent>.<tool> and returns its ack. `msgId`
   * makes a record that may be written twice (a call's one TOOL_CALL record, by its Dispatcher
   * and by a sweeper) stored once.
   */
  audit(
    fields: Pick<
      AuditRecord,
      "action" | "status" | "errorCode" | "errorMessage" | "reason" | "durationMs" | "attempts"
    > & {
      arguments: JsonObject | undefined;
      decidedBy?: string;
    },
    msgId?: string,
  ): Promise<unknown> {
    const c = this.call;
    const id = randomUUID();
    const record = create(AuditRecordSchema, {
      id,
      time: timestampNow(),
      action: fields.action,
      tool: c.tool,
      agentId: c.principal.agentId,
      userId: c.principal.userId,
      roles: c.principal.roles,
      callId: c.callId,
      traceId: c.traceId,
      arguments: fields.arguments ? (this.redact(fields.arguments) as JsonObject) : {},
      status: fields.status,
      errorCode: fields.errorCode,
      errorMessage: fields.errorMessage,
      reason: fields.reason,
      durationMs: fields.durationMs,
      attempts: fields.attempts,
      source: SOURCE,
      decidedBy: fields.decidedBy ?? "",
    });
    const ack = this.publisher.publishMessage(
      subjects.audit("dispatcher", c.principal.agentId, c.tool),
      AuditRecordSchema,
      record,
      { msgId: msgId ?? id },
    );
    this.track(ack);
    return ack;
  }

  /**
   * Publishes the outcome on toolmesh.outcome.<call_id> with the call's ids and caller,
   * deduplicated by call_id; a call held for approval publishes its PENDING outcome under another
   * message id, so its final one (with the call id) is not taken for a duplicate. With `after`,
   * it is published only once that ack came (and not at all if it failed).
   */
  outcome(
    result: Omit<
      Outcome,
      "$typeName" | "source" | "callId" | "traceId" | "parentId" | "tool" | "agentId" | "userId"
    >,
    msgId = this.call.callId,
    after?: Promise<unknown>,
  ): void {
    const c = this.call;
    const value = create(OutcomeSchema, {
      ...result,
      callId: c.callId,
      traceId: c.traceId,
      parentId: c.parentId,
      tool: c.tool,
      agentId: c.principal.agentId,
      userId: c.principal.userId,
      source: SOURCE,
    });
    const publish = () =>
      this.publisher.publishMessage(
        subjects.outcome("dispatcher", c.callId),
        OutcomeSchema,
        value,
        {
          msgId,
        },
      );
    this.track(after ? after.then(publish) : publish());
  }

  /** The records of a call refused before its tool ran: TOOL_REFUSED and its audit record. */
  refused(
    refusal: { code: string; message: string; reason: string },
    args: JsonObject | undefined,
    durationMs: number,
  ): void {
    this.trace(TraceEventKind.TOOL_REFUSED, { code: refusal.code, reason: refusal.reason });
    this.audit({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
      errorCode: refusal.code,
      errorMessage: refusal.message,
      reason: refusal.reason,
      durationMs,
      attempts: 0,
      arguments: args,
    });
  }

  /** The records of a call that ran: TOOL_RESULT, the TOOL_CALL audit record and the outcome. */
  finished(
    end: CallEnd,
    run: { args: JsonObject; attempts: number; startedMs: number; finishedMs: number },
  ): void {
    const c = this.call;
    const durationMs = run.finishedMs - run.startedMs;
    this.trace(TraceEventKind.TOOL_RESULT, {
      status: statusName(end.status),
      duration_ms: durationMs,
      attempts: run.attempts,
      ...(end.error ? { error_code: end.error.code } : {}),
      ...(end.reason ? { reason: end.reason } : {}),
    });
    const audited = this.audit(
      {
        action: AuditAction.TOOL_CALL,
        status: end.status,
        errorCode: end.error?.code ?? "",
        errorMessage: end.error?.message ?? "",
        reason: end.reason,
        durationMs,
        attempts: run.attempts,
        arguments: run.args,
      },
      `audit-${c.callId}`,
    );
    // The outcome follows the audit record's ack: on a cluster the two streams can fail apart,
    // and an outcome without its record would tell the sweeper the call is closed when the
    // audit log lacks it. With no outcome the sweeper closes the call from its lease, and its
    // record with the same message id is stored once.
    this.outcome(
      {
        status: end.status,
        output: end.output,
        error: end.error,
        reason: end.reason,
        durationMs,
        attempts: run.attempts,
        startedAt: timestampFromMs(run.startedMs),
        finishedAt: timestampFromMs(run.finishedMs),
      },
      c.callId,
      audited,
    );
  }

  /** Resolves once every record published so far is acked; rejects if any publish failed. */
  async flush(): Promise<void> {
    await Promise.all(this.pending);
  }

  private track(ack: Promise<unknown>): void {
    // Rejections are reported by flush(); this keeps an early one from being "unhandled".
    ack.catch(() => {});
    this.pending.push(ack);
  }
}
