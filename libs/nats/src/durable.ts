import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
} from "nats";
import { decodeEvent } from "./events.js";

/** How a service consumes one stream with a durable consumer. */
export interface DurableConsumerOptions<Desc extends DescMessage> {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  durable: string;
  schema: Desc;
  log: Logger;
  /** What one message is, for log lines ("audit record"). */
  what: string;
  /**
   * Handles one message; resolving acks it, throwing naks it for redelivery after
   * retryDelayMs, so a handler must be idempotent (JetStream delivers at least once).
   */
  handle(value: MessageShape<Desc>, msg: JsMsg): Promise<void>;
  /** Ids for the log line of a failed message (call_id, trace_id ...). */
  logFields?(value: MessageShape<Desc>): Record<string, unknown>;
  /** Messages handled at once; 1 keeps stream order. */
  concurrency?: number;
  /** Short, so messages held by a killed instance come back within seconds. */
  ackWaitMs?: number;
  maxAckPending?: number;
  retryDelayMs?: number;
}

/** A running durable consumer. */
export interface DurableConsumer {
  /** Stops pulling and waits for the messages in hand. */
  stop(): Promise<void>;
}

/**
 * Creates (or binds to) a durable consumer and hands each decoded message to `handle`,
 * acking only after it succeeded. An undecodable message is logged and terminated, never
 * retried forever.
 */
export async function consumeDurable<Desc extends DescMessage>(
  options: DurableConsumerOptions<Desc>,
): Promise<DurableConsumer> {
  const { js, jsm, stream, durable, schema, log, what } = options;
  const concurrency = options.concurrency ?? 1;
  const maxAckPending = options.maxAckPending ?? 256;
  await jsm.consumers.add(stream, {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs ?? 5_000),
    max_ack_pending: maxAckPending,
  });
  const consumer = await js.consumers.get(stream, durable);
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: Math.max(1, Math.floor(maxAckPending / 2)),
  });

  const handleOne = async (msg: JsMsg): Promise<void> => {
    let value: MessageShape<Desc>;
    try {
      value = decodeEvent(schema, msg);
    } catch (error) {
      log.error({ err: error, subject: msg.subject, seq: msg.seq }, `undecodable ${what}; dropped`);
      msg.term();
      return;
    }
    try {
      await options.handle(value, msg);
      msg.ack();
    } catch (error) {
      log.warn({ err: error, ...options.logFields?.(value) }, `cannot handle ${what}; will retry`);
      msg.nak(options.retryDelayMs ?? 1000);
    }
  };

  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    for await (const msg of messages) {
      if (concurrency === 1) {
        await handleOne(msg);
        continue;
      }
      const done: Promise<void> = handleOne(msg).finally(() => inFlight.delete(done));
      inFlight.add(done);
      if (inFlight.size >= concurrency) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  })();

  return {
    async stop() {
      await messages.close();
      await loop;
    },
  };
}
