import { fromBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  ensureConsumer,
  JetStreamApiCodes,
  jetStreamErrorCode,
  pullOptions,
  retrySetup,
  streamNames,
} from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  nanos,
} from "nats";
import { recordBytes } from "./log-message.js";

const encoder = new TextEncoder();
/** JetStream's acknowledgement payloads (what JsMsg.ack, nak and working send). */
const ACK = encoder.encode("+ACK");
const WORKING = encoder.encode("+WPI");
const nakAfter = (delayMs: number) =>
  encoder.encode(`-NAK ${JSON.stringify({ delay: nanos(delayMs) })}`);

/** One message of the audit log as a follower receives it: its records, and how to settle it. */
export interface LogBlock {
  /** Its sequence in the audit log. */
  readonly seq: number;
  /** Delivered before and not acked in time (or handed back): it may have been handled. */
  readonly redelivered: boolean;
  /** Its records, decoded, in chain order. */
  readonly records: readonly AuditRecord[];
  /** Done with it: it is not delivered again. */
  ack(): void;
  /** Hands it back, to be delivered again after `delayMs`. */
  nak(delayMs: number): void;
  /** Still being handled: its ack wait starts again. */
  working(): void;
}

/** How a service follows the audit log. */
export interface LogFollowerOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Its durable consumer (bus-access.ts gives each reader its own). */
  durable: string;
  log: Logger;
  /** How long a delivered block may stay unacked before it is delivered again. */
  ackWaitMs: number;
  /** Blocks delivered and not yet acked, at most (the server stops delivering at this many). */
  maxAckPending: number;
  /** Bytes of log messages one pull asks for: what the blocks in hand take at most. */
  pullBytes: number;
  /**
   * Handles the blocks that arrived together, in log order, and acks or naks each (now or
   * later). A rejection hands back every block of the call it has not settled.
   */
  onBlocks(blocks: LogBlock[]): void | Promise<void>;
}

/** A running follower. */
export interface LogFollower {
  /** Stops pulling and waits for the handlers of the blocks in hand. */
  stop(): Promise<void>;
}

/**
 * Follows the audit log (TOOLMESH_AUDIT_LOG, written by Audit) with a durable consumer: how
 * Callback and memory-writer derive their views from the one store of record. A consumer
 * created now starts at the log's end (deliver policy `new`), so a first start or an upgrade
 * does not act again on the history; an existing one resumes where it was acked. Waits for the
 * log while Audit has not created it. A block keeps only its records and its reply subject, not
 * the message, so blocks held until their ack (Callback holds them up to a usage flush) do not
 * hold their bytes.
 */
export async function followLog(options: LogFollowerOptions): Promise<LogFollower> {
  const { nc, js, jsm, durable, log } = options;
  const stream = streamNames.auditLog;
  for (let tries = 0; ; tries++) {
    try {
      await ensureConsumer(jsm, stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.New,
        ack_wait: nanos(options.ackWaitMs),
        max_ack_pending: options.maxAckPending,
      });
      if (tries > 0) log.info({ stream }, "the audit log exists now; following it");
      break;
    } catch (error) {
      if (jetStreamErrorCode(error) !== JetStreamApiCodes.StreamNotFound) throw error;
      if (tries === 0) log.info({ stream }, "waiting for Audit to create the audit log");
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  const consumer = await retrySetup(() => js.consumers.get(stream, durable));
  const messages: ConsumerMessages = await consumer.consume(
    pullOptions({ max_bytes: options.pullBytes }),
  );

  const settle = (reply: string, payload: Uint8Array) => {
    if (reply !== "" && !nc.isClosed()) nc.publish(reply, payload);
  };
  const blockOf = (msg: JsMsg): LogBlock => {
    // JsMsg's reply subject (nats.js has it on the message, not in its type): what settles it.
    const reply = (msg as JsMsg & { reply?: string }).reply ?? "";
    let settled = false;
    const records = recordBytes(msg.headers, msg.data).map((bytes) =>
      fromBinary(AuditRecordSchema, bytes),
    );
    return {
      seq: msg.seq,
      redelivered: msg.redelivered,
      records,
      ack() {
        if (settled) return;
        settled = true;
        settle(reply, ACK);
      },
      nak(delayMs) {
        if (settled) return;
        settled = true;
        settle(reply, nakAfter(delayMs));
      },
      working() {
        if (!settled) settle(reply, WORKING);
      },
    };
  };

  const inFlight = new Set<Promise<void>>();
  const run = (blocks: LogBlock[]) => {
    const done: Promise<void> = Promise.resolve()
      .then(() => options.onBlocks(blocks))
      .catch((error: unknown) => {
        log.warn({ err: error, durable }, "cannot handle audit log blocks; they will come again");
        for (const block of blocks) block.nak(1000);
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  let pending: LogBlock[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const blocks = pending;
    pending = [];
    run(blocks);
  };
  const loop = (async () => {
    for await (const msg of messages) {
      try {
        pending.push(blockOf(msg));
      } catch (error) {
        // Never acked, never redelivered: a block that cannot be read now never will be.
        log.error({ err: error, seq: msg.seq, durable }, "undecodable audit log message; skipped");
        msg.term();
        continue;
      }
      if (!scheduled) {
        // Messages of one pull response arrive within one turn; they are handled together.
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
      await Promise.all(inFlight);
    },
  };
}
