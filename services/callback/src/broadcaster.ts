import { create, toBinary } from "@bufbuild/protobuf";
import { callFields, type Logger } from "@toolmesh/log";
import {
  type BatchConsumer,
  consumeBatches,
  publishEncoded,
  publishEvent,
  subjects,
} from "@toolmesh/nats";
import {
  awaitsApproval,
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  isFinal,
  type Outcome,
  OutcomeSchema,
  statusWord,
  type TraceEvent,
  TraceEventSchema,
} from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager } from "nats";
import type { CallStore } from "./call-store.js";
import { callbackKind, normalise } from "./normalise.js";
import type { OutcomeHistory } from "./outcome-history.js";

/** The durable consumer on TOOLMESH_OUTCOME; a restarted service catches up from here. */
export const CALLBACK_CONSUMER = "callback";
const OUTCOME_STREAM = "TOOLMESH_OUTCOME";
const MAX_ACK_PENDING = 1024;

/** What the Callback service does with one outcome. */
export type CallbackAction =
  | { kind: "pending"; event: CallbackEvent }
  | { kind: "broadcast"; event: CallbackEvent }
  | { kind: "ignore"; event: CallbackEvent; why: string };

/** The one place that maps a bus message to the Callback service's action. */
export function callbackActionOf(outcome: Outcome): CallbackAction {
  const event = normalise(outcome);
  if (isFinal(event.status)) return { kind: "broadcast", event };
  if (event.status === CallStatus.PENDING) return { kind: "pending", event };
  return { kind: "ignore", event, why: "outcome without a final status" };
}

/**
 * Turns each outcome into one callback event: a CALLBACK_* trace event and a broadcast with
 * Nats-Msg-Id = call_id. The outcome is acked only after the call is stored, both publishes are
 * acked and the call is marked broadcast, so a crash at any point means a redelivery, never a
 * loss; the mark, the outcome history (once the key has gone) and the message ids make the
 * redelivery broadcast nothing twice. Outcomes of different calls are independent, so a whole
 * batch is handled at once: its KV writes and publishes leave together and their acks come back
 * together.
 */
export class OutcomeBroadcaster {
  private consumer: BatchConsumer | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      calls: CallStore;
      /** Calls broadcast before their key left the bucket. */
      history: OutcomeHistory;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { jsm, js, log } = this.deps;
    this.consumer = await consumeBatches({
      js,
      jsm,
      stream: OUTCOME_STREAM,
      durable: CALLBACK_CONSUMER,
      schema: OutcomeSchema,
      log,
      what: "outcome",
      maxAckPending: MAX_ACK_PENDING,
      handleBatch: (batch) =>
        Promise.allSettled(batch.map((d) => this.act(callbackActionOf(d.value)))),
      logFields: (outcome: Outcome) => ({ ...callFields(outcome), tool: outcome.tool }),
    });
  }

  private async act(action: CallbackAction): Promise<void> {
    const { event } = action;
    if (action.kind === "pending") {
      if (await this.deps.calls.createPending(event)) return;
      // An approved call whose asynchronous tool accepted it: its PENDING no longer waits for an
      // approver, so its backend may Report it.
      const stored = await this.deps.calls.get(event.callId);
      if (stored && awaitsApproval(stored.event) && !awaitsApproval(event))
        await this.deps.calls.update(event, stored.revision);
    } else if (action.kind === "ignore") {
      this.deps.log.warn({ ...callFields(event), status: event.status }, `${action.why}; dropped`);
    } else {
      await this.broadcast(event);
    }
  }

  private async broadcast(event: CallbackEvent): Promise<void> {
    const { log, calls } = this.deps;
    // A second final outcome of a call broadcast before its key's live window: already done.
    if ((await this.deps.history.find(event.callId)).found) return;
    let final = event;
    let encoded = toBinary(CallbackEventSchema, event);
    // The common case, a call seen for the first time, costs one KV write here and the mark.
    let revision = await calls.create(event.callId, encoded);
    if (revision === undefined) {
      const stored = await calls.get(event.callId);
      if (stored?.broadcast) return;
      if (stored && isFinal(stored.event.status)) {
        // The first final result stored wins: a Report may have settled the call already.
        final = stored.event;
        encoded = toBinary(CallbackEventSchema, final);
        revision = stored.revision;
      } else if (stored) {
        // PENDING until now; a Report racing this write makes it fail and the outcome retry.
        revision = await calls.update(event, stored.revision);
      } else {
        revision = await calls.put(event);
      }
    }
    await this.publish(final, encoded);
    await calls.markBroadcast(final, revision);
    if (log.isLevelEnabled("debug")) {
      log.debug(
        {
          ...callFields(final),
          tool: final.tool,
          status: statusWord(final.status),
        },
        "outcome broadcast",
      );
    }
  }

  private async publish(event: CallbackEvent, encoded: Uint8Array): Promise<void> {
    const { js } = this.deps;
    const trace = callbackTraceEvent(event);
    await Promise.all([
      publishEvent(js, subjects.trace("callback", event.traceId), TraceEventSchema, trace, {
        msgId: trace.id,
      }),
      publishEncoded(
        js,
        subjects.callback(statusWord(event.status), event.tool),
        CallbackEventSchema,
        encoded,
        { msgId: event.callId },
      ),
    ]);
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}

/** The CALLBACK_* trace event that announces a normalised outcome in its call's trace. */
export function callbackTraceEvent(event: CallbackEvent): TraceEvent {
  return create(TraceEventSchema, {
    id: `callback-${event.callId}`,
    traceId: event.traceId,
    callId: event.callId,
    parentId: event.parentId,
    kind: callbackKind(event.status),
    tool: event.tool,
    agentId: event.agentId,
    userId: event.userId,
    ...(event.time ? { time: event.time } : {}),
    payload: {
      status: statusWord(event.status),
      duration_ms: event.durationMs,
      attempts: event.attempts,
      ...(event.error ? { error_code: event.error.code } : {}),
      ...(event.reason ? { reason: event.reason } : {}),
    },
    source: "callback",
  });
}
