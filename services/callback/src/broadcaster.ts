import { create } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { decodeEvent, publishEvent, subjects } from "@toolmesh/nats";
import {
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  OutcomeSchema,
  TraceEventSchema,
} from "@toolmesh/proto";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
} from "nats";
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
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      calls: CallStore;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { jsm, js } = this.deps;
    await jsm.consumers.add(OUTCOME_STREAM, {
      durable_name: CALLBACK_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Short, so outcomes held by a killed instance come back within seconds.
      ack_wait: nanos(5_000),
      max_ack_pending: 256,
    });
    const consumer = await js.consumers.get(OUTCOME_STREAM, CALLBACK_CONSUMER);
    this.messages = await consumer.consume({ max_messages: 128 });
    const messages = this.messages;
    // Outcomes of different calls are independent, so several are handled at once.
    const inFlight = new Set<Promise<void>>();
    this.loop = (async () => {
      for await (const msg of messages) {
        const done: Promise<void> = this.handle(msg).finally(() => inFlight.delete(done));
        inFlight.add(done);
        if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    })();
  }

  private async handle(msg: JsMsg): Promise<void> {
    const { log, calls } = this.deps;
    let event: CallbackEvent;
    try {
      event = normalise(decodeEvent(OutcomeSchema, msg));
    } catch (error) {
      log.error({ err: error, subject: msg.subject }, "undecodable outcome; dropped");
      msg.term();
      return;
    }
    const ids = { call_id: event.callId, trace_id: event.traceId, tool: event.tool };
    try {
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
      msg.ack();
    } catch (error) {
      log.warn({ err: error, ...ids }, "cannot broadcast outcome; will retry");
      msg.nak(1000);
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
    await this.messages?.close();
    await this.loop;
  }
}
