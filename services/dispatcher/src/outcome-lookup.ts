import { fromBinary } from "@bufbuild/protobuf";
import { JetStreamApiCodes, jetStreamErrorCode, streamNames, subjects } from "@toolmesh/nats";
import { CallStatus, type Outcome, OutcomeSchema } from "@toolmesh/proto";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type MsgRequest } from "nats";
import { AWAITING_APPROVAL } from "./approvals/approval-records.js";

/** Whether the Dispatcher has recorded a call's outcome (the sweepers' question). */
export interface OutcomeLookup {
  /**
   * True once the Dispatcher published the call's outcome: its result, or PENDING from an
   * asynchronous tool. The PENDING outcome of a call held for approval does not count: the
   * call has not run yet.
   */
  hasOutcome(callId: string): Promise<boolean>;
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
  /** The call's outcomes, or undefined when none was published (or retention dropped them). */
  read(callId: string): Promise<CallOutcomes | undefined>;
  /** Resolves once the call's latest outcome is not PENDING, or when `signal` aborts. */
  waitForEnd(callId: string, signal: AbortSignal): Promise<void>;
}

/** True when a call has ended: its latest outcome is anything but PENDING. */
export function hasEnded(outcomes: CallOutcomes): boolean {
  return outcomes.last.status !== CallStatus.PENDING;
}

/** Reads the outcomes the Dispatcher (and Report) published for a call from TOOLMESH_OUTCOME. */
export class StreamOutcomeLookup implements OutcomeLookup, OutcomeReader {
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    /** TOOLMESH_STREAM_MAX_AGE_*: how long TOOLMESH_OUTCOME keeps a call's outcomes. */
    readonly retentionMs: number,
  ) {}

  async hasOutcome(callId: string): Promise<boolean> {
    const outcome = await this.get({ last_by_subj: subjects.outcome("dispatcher", callId) });
    return (
      outcome !== undefined &&
      !(outcome.status === CallStatus.PENDING && outcome.reason === AWAITING_APPROVAL)
    );
  }

  async read(callId: string): Promise<CallOutcomes | undefined> {
    const subject = subjects.outcome("dispatcher", callId);
    const [first, last, reported] = await Promise.all([
      // STREAM.MSG.GET takes next_by_subj (nats-server 2.9+); nats.js types only seq and last.
      this.get({ seq: 0, next_by_subj: subject } as unknown as MsgRequest),
      this.get({ last_by_subj: subject }),
      this.get({ last_by_subj: subjects.outcome("callback", callId) }),
    ]);
    if (!first || !last) return undefined;
    return { first, last: reported ?? last };
  }

  async waitForEnd(callId: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    // An ordered consumer delivers the latest outcome of each subject, then each new one as it is
    // published: the wait is woken by the outcome itself, never by polling.
    const consumer = await this.js.consumers.get(streamNames.outcome, {
      filterSubjects: [
        subjects.outcome("dispatcher", callId),
        subjects.outcome("callback", callId),
      ],
      deliver_policy: DeliverPolicy.LastPerSubject,
    });
    const messages = await consumer.consume({ max_messages: 8 });
    const stop = () => void messages.close();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const msg of messages) {
        if (fromBinary(OutcomeSchema, msg.data).status !== CallStatus.PENDING) return;
      }
    } finally {
      signal.removeEventListener("abort", stop);
      await messages.close();
    }
  }

  private async get(query: MsgRequest): Promise<Outcome | undefined> {
    try {
      const stored = await this.jsm.streams.getMessage(streamNames.outcome, query);
      return fromBinary(OutcomeSchema, stored.data);
    } catch (error) {
      if (jetStreamErrorCode(error) === JetStreamApiCodes.NoMessageFound) return undefined;
      throw error;
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
