import { fromBinary } from "@bufbuild/protobuf";
import { callTimeOf } from "@toolmesh/names";
import { readWindow, streamNames, subjects } from "@toolmesh/nats";
import { awaitsApproval, CallStatus, type Outcome, OutcomeSchema } from "@toolmesh/proto";
import { DeliverPolicy, type JetStreamClient, type NatsConnection } from "nats";

/** Whether the Dispatcher has recorded a call's outcome (the sweepers' question). */
export interface OutcomeLookup {
  /**
   * True once the Dispatcher published the call's outcome: its result, or PENDING from an
   * asynchronous tool. The PENDING outcome of a call held for approval does not count: the
   * call has not run yet. `sinceMs` is when the call started (or was held): its outcomes are
   * looked for from then on.
   */
  hasOutcome(callId: string, sinceMs: number): Promise<boolean>;
}

/** What the outcome stream holds of one call. */
export interface CallOutcomes {
  /** The Dispatcher's first outcome of the call: PENDING while held, or its only one. */
  first: Outcome;
  /** The call's latest outcome: an asynchronous tool's report if there is one, else the Dispatcher's last. */
  last: Outcome;
}

/** Reads a call's outcomes and waits for its end (the MCP tasks' source of truth). */
export interface OutcomeReader {
  /** How long the stream keeps an outcome, in ms; 0 when it keeps them without an age limit. */
  readonly retentionMs: number;
  /**
   * The outcomes of a call whose id the Dispatcher made, or undefined when none was published
   * (or retention dropped them, or a caller chose the id).
   */
  read(callId: string): Promise<CallOutcomes | undefined>;
  /** Resolves once the call's latest outcome is not PENDING, or when `signal` aborts. */
  waitForEnd(callId: string, signal: AbortSignal): Promise<void>;
}

/** True when a call has ended: its latest outcome is anything but PENDING. */
export function hasEnded(outcomes: CallOutcomes): boolean {
  return outcomes.last.status !== CallStatus.PENDING;
}

/**
 * Reads the outcomes the Dispatcher (and Report) published for a call from TOOLMESH_OUTCOME.
 * Outcomes are filed under a shard of their call id, so a call's are read from its shard over the
 * stretch since the call started: the read costs what that stretch holds (about one in 256 of its
 * outcomes), never what the stream's history holds.
 */
export class StreamOutcomeLookup implements OutcomeLookup, OutcomeReader {
  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    /** TOOLMESH_STREAM_MAX_AGE_*: how long TOOLMESH_OUTCOME keeps a call's outcomes. */
    readonly retentionMs: number,
    /** How far before its start a call's outcomes are looked for: clocks of hosts differ. */
    private readonly leadMs = 10_000,
  ) {}

  async hasOutcome(callId: string, sinceMs: number): Promise<boolean> {
    let found = false;
    await readWindow({
      nc: this.nc,
      stream: streamNames.outcome,
      subject: subjects.outcome("dispatcher", callId),
      fromMs: sinceMs - this.leadMs,
      visit: (msg) => {
        const outcome = fromBinary(OutcomeSchema, msg.data);
        found = outcome.callId === callId && !awaitsApproval(outcome);
        return found;
      },
    });
    return found;
  }

  async read(callId: string): Promise<CallOutcomes | undefined> {
    const sinceMs = callTimeOf(callId);
    if (sinceMs === undefined) return undefined;
    const fromDispatcher = subjects.outcome("dispatcher", callId);
    let first: Outcome | undefined;
    let last: Outcome | undefined;
    let reported: Outcome | undefined;
    await readWindow({
      nc: this.nc,
      stream: streamNames.outcome,
      subject: subjects.outcomes(callId),
      fromMs: sinceMs - this.leadMs,
      visit: (msg) => {
        const outcome = fromBinary(OutcomeSchema, msg.data);
        if (outcome.callId !== callId) return false;
        if (msg.subject === fromDispatcher) {
          first ??= outcome;
          last = outcome;
        } else {
          reported = outcome;
        }
        return false;
      },
    });
    if (!first || !last) return undefined;
    return { first, last: reported ?? last };
  }

  async waitForEnd(callId: string, signal: AbortSignal): Promise<void> {
    const sinceMs = callTimeOf(callId);
    if (signal.aborted || sinceMs === undefined) return;
    // An ordered consumer delivers the shard's outcomes from the call's start, then each new one
    // as it is published: the wait is woken by the outcome itself, never by polling.
    const consumer = await this.js.consumers.get(streamNames.outcome, {
      filterSubjects: [
        subjects.outcome("dispatcher", callId),
        subjects.outcome("callback", callId),
      ],
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: new Date(sinceMs - this.leadMs).toISOString(),
    });
    const messages = await consumer.consume({ max_messages: 256 });
    const stop = () => void messages.close();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const msg of messages) {
        const outcome = fromBinary(OutcomeSchema, msg.data);
        if (outcome.callId === callId && outcome.status !== CallStatus.PENDING) return;
      }
    } finally {
      signal.removeEventListener("abort", stop);
      await messages.close();
    }
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

  async waitForEnd(): Promise<void> {}
}
