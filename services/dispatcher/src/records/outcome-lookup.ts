import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { subjects } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  isFinal,
} from "@toolmesh/proto";
import { callOutcome, lookupCall, outcomeOf } from "@toolmesh/records";
import type { NatsConnection } from "nats";

/** Whether a call's end was recorded (the approval sweep's question). */
export interface OutcomeLookup {
  /**
   * True once the call's end record is in the audit log: its result, or PENDING from an
   * asynchronous tool. The PENDING of a call held for approval does not count: the call has not
   * run yet.
   */
  hasOutcome(callId: string): Promise<boolean>;
}

/** What a call's records say of its outcome. */
export interface CallOutcomes {
  /** The first outcome the records state: PENDING while held, or the call's only one. */
  first: CallbackEvent;
  /** The call's outcome now: the first final one, else the latest PENDING. */
  last: CallbackEvent;
  /** When its first record was written (ms since epoch). */
  createdMs: number;
  /** When its latest record was written. */
  updatedMs: number;
}

/** Reads a call's outcomes and waits for its end (the MCP tasks' source of truth). */
export interface OutcomeReader {
  /** How long a call's records are kept, in ms; 0 when without an age limit. */
  readonly retentionMs: number;
  /** The outcomes a call's records state, or undefined when it has none (or is not kept). */
  read(callId: string): Promise<CallOutcomes | undefined>;
  /**
   * A call's outcomes and its start record (who made it, which Dispatcher runs it), from one
   * read of its records.
   */
  readCall(
    callId: string,
  ): Promise<{ outcomes: CallOutcomes | undefined; start: AuditRecord | undefined }>;
  /** Resolves once the call's outcome is final, or when `signal` aborts. */
  waitForEnd(callId: string, tool: string, signal: AbortSignal): Promise<void>;
}

/** True when a call has ended: its outcome is anything but PENDING. */
export function hasEnded(outcomes: CallOutcomes): boolean {
  return outcomes.last.status !== CallStatus.PENDING;
}

/** The outcomes a call's records state, in chain order; undefined when none states one. */
export function outcomesOf(records: readonly AuditRecord[]): CallOutcomes | undefined {
  const stated = records.flatMap((r) => outcomeOf(r) ?? []);
  const first = stated[0];
  const last = callOutcome(records);
  if (!first || !last) return undefined;
  const times = records.flatMap((r) => (r.time ? [timestampMs(r.time)] : []));
  return { first, last, createdMs: Math.min(...times), updatedMs: Math.max(...times) };
}

/** How often a wait for a call's end reads its records again, besides awaiting its broadcast. */
const END_RECHECK_MS = 5000;

/**
 * A call's outcomes as its records in the audit log state them, asked of Audit over the bus
 * (lookupCall); the end of a call is awaited as its broadcast, its records read again every few
 * seconds only as a backstop.
 */
export class AuditOutcomes implements OutcomeLookup, OutcomeReader {
  constructor(
    private readonly nc: NatsConnection,
    /** How long the audit log and its archive keep a call's records; 0 for no age limit. */
    readonly retentionMs: number,
    private readonly timeoutMs = 5000,
  ) {}

  private records(callId: string): Promise<AuditRecord[]> {
    return lookupCall(this.nc, callId, { wait: true, timeoutMs: this.timeoutMs });
  }

  async hasOutcome(callId: string): Promise<boolean> {
    const records = await this.records(callId);
    return records.some(
      (r) => r.action === AuditAction.TOOL_CALL || r.action === AuditAction.TOOL_REPORTED,
    );
  }

  async read(callId: string): Promise<CallOutcomes | undefined> {
    return outcomesOf(await this.records(callId));
  }

  async readCall(callId: string) {
    const records = await this.records(callId);
    return {
      outcomes: outcomesOf(records),
      start: records.find((r) => r.action === AuditAction.TOOL_START),
    };
  }

  async waitForEnd(callId: string, tool: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearInterval(timer);
        sub.unsubscribe();
        signal.removeEventListener("abort", finish);
        resolve();
      };
      // Subscribed before the records are read again, so an end broadcast meanwhile is not missed.
      const sub = this.nc.subscribe(subjects.callbacksOf(tool), {
        callback: (error, msg) => {
          if (error) return finish();
          try {
            const event = fromBinary(CallbackEventSchema, msg.data);
            if (event.callId === callId && isFinal(event.status)) finish();
          } catch {
            // Not a broadcast (nothing else is published there by the services); ignored.
          }
        },
      });
      signal.addEventListener("abort", finish, { once: true });
      // The records are read again now and, as a backstop, every few seconds: an end broadcast
      // before the subscription, with a read that gave up settling (a slow Audit), is found then.
      const check = () =>
        this.read(callId).then(
          (now) => {
            if (now && hasEnded(now)) finish();
          },
          () => undefined,
        );
      const timer = setInterval(check, END_RECHECK_MS);
      timer.unref();
      void check();
    });
  }
}

/** No outcomes at all, for in-process tests. */
export class NoOutcomes implements OutcomeLookup, OutcomeReader {
  readonly retentionMs = 0;

  async hasOutcome(): Promise<boolean> {
    return false;
  }

  async read(): Promise<CallOutcomes | undefined> {
    return undefined;
  }

  async readCall() {
    return { outcomes: undefined, start: undefined };
  }

  async waitForEnd(): Promise<void> {}
}
