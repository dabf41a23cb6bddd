import { create } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { consumeDurable, type DurableConsumer, publishEvent, subjects } from "@toolmesh/nats";
import {
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  type Outcome,
  OutcomeSchema,
  TraceEventSchema,
} from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager } from "nats";
import type { CallStore } from "./call-store.js";
import { callbackKind, isFinal, normalise, statusWord } from "./normalise.js";

/** The durable consumer on TOOLMESH_OUTCOME; a restarted service catches up from here. */
export const CALLBACK_CONSUMER = "callback";
const OUTCOME_STREAM = "TOOLMESH_OUTCOME";
const MAX_IN_FLIGHT = 32;

/**
 * Turns each outcome into one callback event: a CALLBACK_* trace event and a broadcast with
 * Nats-Msg-Id = call_id. The outcome is acked only after both publishes are acked and the call
 * is stored, so a crash at any point means a redelivery, never a loss; the `sent` mark and the
 * message ids make the redelivery broadcast nothing twice.
 */
export class OutcomeBroadcaster {
  private consumer: DurableConsumer | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      calls: CallStore;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { jsm, js, log } = this.deps;
    this.consumer = await consumeDurable({
      js,
      jsm,
      stream: OUTCOME_STREAM,
      durable: CALLBACK_CONSUMER,
      schema: OutcomeSchema,
      log,
      what: "outcome",
      // Outcomes of different calls are independent, so several are handled at once.
      concurrency: MAX_IN_FLIGHT,
      handle: (outcome) => this.broadcast(normalise(outcome)),
      logFields: (outcome: Outcome) => ({
        call_id: outcome.callId,
        trace_id: outcome.traceId,
        tool: outcome.tool,
      }),
    });
  }

  private async broadcast(event: CallbackEvent): Promise<void> {
    const { log, calls } = this.deps;
    const ids = { call_id: event.callId, trace_id: event.traceId, tool: event.tool };
    if (event.status === CallStatus.PENDING) {
      await calls.createPending(event);
    } else if (!isFinal(event.status)) {
      log.warn({ ...ids, status: event.status }, "outcome without a final status; dropped");
    } else if (!(await calls.wasBroadcast(event.callId))) {
      // The first final result stored wins: a Report may have settled the call already.
      const stored = await calls.get(event.callId);
      const final = stored && isFinal(stored.event.status) ? stored.event : event;
      await this.publish(final);
      if (final === event) await calls.put(final);
      await calls.markBroadcast(final.callId);
      log.debug({ ...ids, status: statusWord(final.status) }, "outcome broadcast");
    }
  }

  private async publish(event: CallbackEvent): Promise<void> {
    const { js } = this.deps;
    const trace = create(TraceEventSchema, {
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
    await Promise.all([
      publishEvent(js, subjects.trace(event.traceId), TraceEventSchema, trace, {
        msgId: trace.id,
      }),
      publishEvent(
        js,
        subjects.callback(statusWord(event.status), event.tool),
        CallbackEventSchema,
        event,
        {
          msgId: event.callId,
        },
      ),
    ]);
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
