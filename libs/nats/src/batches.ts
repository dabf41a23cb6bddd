import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  AckPolicy,
  type ConsumerConfig,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
} from "nats";
import { decodeEvent } from "./events.js";
import { JetStreamApiCodes, jetStreamErrorCode } from "./jetstream-errors.js";

/** One decoded message of a batch. */
export interface Delivered<Desc extends DescMessage> {
  value: MessageShape<Desc>;
  msg: JsMsg;
}

/** How a service consumes one stream in batches with a durable consumer. */
export interface BatchConsumerOptions<Desc extends DescMessage> {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  durable: string;
  schema: Desc;
  log: Logger;
  /** What one message is, for log lines ("outcome"). */
  what: string;
  /**
   * Handles the messages that arrived together; settles one result per message, in order. A
   * fulfilled result acks its message, a rejected one naks it for redelivery after
   * retryDelayMs, so handling must be idempotent (JetStream delivers at least once).
   */
  handleBatch(batch: Delivered<Desc>[]): Promise<PromiseSettledResult<unknown>[]>;
  /** Ids for the log line of a failed message (call_id, trace_id ...). */
  logFields?(value: MessageShape<Desc>): Record<string, unknown>;
  /** Most messages handed over at once. */
  maxBatch?: number;
  /** Messages delivered and not yet acked, across all batches in flight. */
  maxAckPending?: number;
  /** Short, so messages held by a killed instance come back within seconds. */
  ackWaitMs?: number;
  retryDelayMs?: number;
}

/** A running batch consumer. */
export interface BatchConsumer {
  /** Stops pulling and waits for the batches in hand. */
  stop(): Promise<void>;
}

/**
 * Creates (or binds to) a durable consumer and hands its messages over in batches: whatever
 * arrived before the event loop turns, up to maxBatch. Several batches may be in flight at once
 * (up to maxAckPending messages, which the server enforces), so a handler that waits on disk or
 * on JetStream acks overlaps with the next batch. Acks of one batch leave in one socket write.
 */
export async function consumeBatches<Desc extends DescMessage>(
  options: BatchConsumerOptions<Desc>,
): Promise<BatchConsumer> {
  const { js, jsm, stream, durable, schema, log, what } = options;
  const maxBatch = options.maxBatch ?? 256;
  const maxAckPending = options.maxAckPending ?? 1024;
  await ensureConsumer(jsm, stream, {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs ?? 5_000),
    max_ack_pending: maxAckPending,
  });
  const consumer = await js.consumers.get(stream, durable);
  const messages = await consumer.consume({ max_messages: Math.max(1, maxAckPending / 2) });

  const settle = (batch: Delivered<Desc>[], results: PromiseSettledResult<unknown>[]) => {
    batch.forEach(({ value, msg }, i) => {
      const result = results[i];
      if (result?.status === "fulfilled") {
        msg.ack();
        return;
      }
      const err = result ? result.reason : new Error("the handler returned no result");
      log.warn({ err, ...options.logFields?.(value) }, `cannot handle ${what}; will retry`);
      msg.nak(options.retryDelayMs ?? 1000);
    });
  };
  const inFlight = new Set<Promise<void>>();
  const run = (batch: Delivered<Desc>[]) => {
    const done: Promise<void> = options
      .handleBatch(batch)
      .then(
        (results) => settle(batch, results),
        (error: unknown) =>
          settle(
            batch,
            batch.map(() => ({ status: "rejected", reason: error })),
          ),
      )
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };

  let pending: Delivered<Desc>[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    run(batch);
  };
  const loop = (async () => {
    for await (const msg of messages) {
      let value: MessageShape<Desc>;
      try {
        value = decodeEvent(schema, msg);
      } catch (error) {
        log.error(
          { err: error, subject: msg.subject, seq: msg.seq },
          `undecodable ${what}; dropped`,
        );
        msg.term();
        continue;
      }
      pending.push({ value, msg });
      if (pending.length >= maxBatch) flush();
      else if (!scheduled) {
        // Messages of one pull response arrive within one turn; hand them over together.
        scheduled = true;
        setImmediate(flush);
      }
    }
    flush();
    await Promise.all(inFlight);
  })();

  return {
    async stop() {
      await messages.close();
      await loop;
    },
  };
}

/**
 * Creates a durable consumer, or brings an existing one to these limits (the server refuses to
 * create one that exists with other settings).
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
): Promise<void> {
  try {
    const { config: current } = await jsm.consumers.info(stream, config.durable_name);
    if (
      current.ack_wait !== config.ack_wait ||
      current.max_ack_pending !== config.max_ack_pending
    ) {
      await jsm.consumers.update(stream, config.durable_name, {
        ack_wait: config.ack_wait,
        max_ack_pending: config.max_ack_pending,
      });
    }
  } catch (error) {
    if (jetStreamErrorCode(error) !== JetStreamApiCodes.ConsumerNotFound) throw error;
    await jsm.consumers.add(stream, config);
  }
}
