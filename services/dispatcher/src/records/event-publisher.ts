import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { JetStreamApiCodes, newInbox, TYPE_HEADER } from "@toolmesh/nats";
import {
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  headers as natsHeaders,
  type Subscription,
} from "nats";
import type { StoreCapacity } from "./store-capacity.js";

/** Publishes a Protobuf event to JetStream; resolves once the stream acked it. */
export interface EventPublisher {
  /** False while the connection to NATS is down: a publish now would only wait and fail. */
  readonly writable: boolean;
  /** The largest message NATS carries (the server's max_payload). */
  readonly maxPayload: number;
  /** Why the record store has no room now (a stream at its limit), or undefined. */
  readonly full: string | undefined;
  /** Resolves with the stream sequence JetStream stored the message at. */
  publish<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options?: { msgId?: string },
  ): Promise<number>;
}

/**
 * Why a record could not be written: NATS unreachable, no ack in time, the stream full (or the
 * message over its limit), or another refusal. The chain maps `full` to RESOURCE_EXHAUSTED and
 * the rest to UNAVAILABLE.
 */
export type PublishFailure = "unreachable" | "timeout" | "full" | "refused";

/** Raised when JetStream refuses a message or does not ack it in time. */
export class PublishError extends Error {
  override name = "PublishError";
  constructor(
    readonly failure: PublishFailure,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** JetStream refusals that mean "no room": the chain refuses new calls until there is. */
const FULL_CODES: ReadonlySet<number> = new Set([
  JetStreamApiCodes.StoreFailed,
  JetStreamApiCodes.InsufficientResources,
]);

interface Pending {
  resolve(sequence: number): void;
  reject(error: Error): void;
  /** When it was first sent: the ack timeout counts from here, resends included. */
  sentAt: number;
  message: { subject: string; data: Uint8Array; headers: MsgHdrs };
  resends: number;
}

/** JetStream refusals that mean "no stream leader right now" (an election): sent again shortly. */
const BETWEEN_LEADERS: ReadonlySet<number> = new Set([JetStreamApiCodes.ClusterNotAvailable]);

/**
 * JetStream publishing for the hot path: plain publishes with a reply subject under one inbox
 * subscription, acks matched by sequence, timeouts swept once a second. nats.js's js.publish
 * makes a request object (with a captured stack) per message; with four records per call
 * that was the Dispatcher's largest CPU cost after the sockets themselves.
 */
export class JetStreamPublisher implements EventPublisher {
  private readonly inbox: string;
  private readonly pending = new Map<number, Pending>();
  private readonly subscription: Subscription;
  private readonly sweeper: NodeJS.Timeout;
  private sequence = 0;
  private outbox: {
    subject: string;
    data: Uint8Array;
    reply: string;
    headers: MsgHdrs;
    seq: number;
  }[] = [];
  private flushScheduled = false;
  private connected = true;

  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs = 5000,
    private readonly capacity?: StoreCapacity,
  ) {
    // Under the connection's own inbox prefix: nats-server lets only the Dispatcher read its acks.
    this.inbox = newInbox(nc);
    this.subscription = nc.subscribe(`${this.inbox}.*`, {
      callback: (_error, msg) => this.onAck(msg),
    });
    this.sweeper = setInterval(() => this.sweep(), 1000);
    this.sweeper.unref();
    void this.followConnection();
  }

  get writable(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  get full(): string | undefined {
    return this.capacity?.full;
  }

  get maxPayload(): number {
    return this.nc.info?.max_payload ?? 1024 * 1024;
  }

  /** Tracks the connection, and fails what waits for an ack the moment it is lost. */
  private async followConnection(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === "disconnect") {
        this.connected = false;
        // Acks of messages sent before the break may never come; their callers should not wait.
        this.failPending("unreachable", "the connection to NATS was lost before JetStream acked");
      } else if (status.type === "reconnect") {
        this.connected = true;
      }
    }
  }

  publish<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options: { msgId?: string } = {},
  ): Promise<number> {
    if (!this.writable) {
      return Promise.reject(
        new PublishError("unreachable", `NATS is unreachable; cannot write to ${subject}`),
      );
    }
    const h = natsHeaders();
    h.set(TYPE_HEADER, schema.typeName);
    if (options.msgId) h.set("Nats-Msg-Id", options.msgId);
    const seq = ++this.sequence;
    const data = toBinary(schema, value);
    this.capacity?.consume(subject, data.length + subject.length + 128);
    return new Promise<number>((resolve, reject) => {
      this.pending.set(seq, {
        resolve,
        reject,
        sentAt: Date.now(),
        message: { subject, data, headers: h },
        resends: 0,
      });
      this.send(seq, subject, data, h);
    });
  }

  private send(seq: number, subject: string, data: Uint8Array, headers: MsgHdrs): void {
    this.outbox.push({ subject, data, reply: `${this.inbox}.${seq}`, headers, seq });
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  /**
   * Sends a message again after a refusal that stored nothing (no stream leader answered, or the
   * cluster is between leaders), backing off from 100 ms, while its ack timeout allows: a leader
   * election takes a few seconds, and a call should wait that out rather than be refused. True
   * when it was queued again.
   */
  private resend(seq: number, waiter: Pending): boolean {
    const delayMs = Math.min(100 * 2 ** waiter.resends, 1000);
    if (!this.writable || Date.now() + delayMs - waiter.sentAt >= this.timeoutMs) return false;
    waiter.resends++;
    setTimeout(() => {
      if (this.pending.get(seq) !== waiter) return;
      const { subject, data, headers } = waiter.message;
      this.send(seq, subject, data, headers);
    }, delayMs).unref();
    return true;
  }

  /**
   * Hands every message queued during this turn of the event loop to the connection at once,
   * so they leave in one socket write: on this machine a write costs far more than a message.
   */
  private readonly flush = () => {
    this.flushScheduled = false;
    const batch = this.outbox;
    this.outbox = [];
    for (const m of batch) {
      try {
        this.nc.publish(m.subject, m.data, { reply: m.reply, headers: m.headers });
      } catch (error) {
        const waiter = this.pending.get(m.seq);
        this.pending.delete(m.seq);
        waiter?.reject(
          new PublishError("unreachable", `cannot publish to ${m.subject}: ${String(error)}`, {
            cause: error,
          }),
        );
      }
    }
  };

  private onAck(msg: Msg): void {
    const seq = Number(msg.subject.slice(this.inbox.length + 1));
    const waiter = this.pending.get(seq);
    if (!waiter) return;
    const status = msg.headers?.code ?? 0;
    // 503 "no responders": no stream leader took the message, so nothing was stored. A message
    // sent again keeps its place in `pending`, which stays in the order of first sends.
    if (status === 503 && this.resend(seq, waiter)) return;
    if (status >= 400) {
      this.pending.delete(seq);
      waiter.reject(
        new PublishError("refused", `JetStream answered ${status}: no stream takes this subject`),
      );
      return;
    }
    try {
      const ack = JSON.parse(new TextDecoder().decode(msg.data)) as {
        seq?: number;
        error?: { description?: string; err_code?: number };
      };
      if (!ack.error) {
        this.pending.delete(seq);
        waiter.resolve(ack.seq ?? 0);
        return;
      }
      if (BETWEEN_LEADERS.has(ack.error.err_code ?? 0) && this.resend(seq, waiter)) return;
      this.pending.delete(seq);
      const full = FULL_CODES.has(ack.error.err_code ?? 0);
      if (full) this.capacity?.refused(`JetStream refused a record: ${ack.error.description}`);
      waiter.reject(
        new PublishError(
          full ? "full" : "refused",
          `JetStream refused the message: ${ack.error.description}`,
        ),
      );
    } catch {
      this.pending.delete(seq);
      waiter.reject(new PublishError("refused", "JetStream sent an ack that is not JSON"));
    }
  }

  private sweep(): void {
    const limit = Date.now() - this.timeoutMs;
    for (const [seq, waiter] of this.pending) {
      // In the order of first sends: the rest are younger.
      if (waiter.sentAt > limit) break;
      this.pending.delete(seq);
      waiter.reject(
        new PublishError("timeout", `JetStream did not ack within ${this.timeoutMs} ms`),
      );
    }
  }

  private failPending(failure: PublishFailure, message: string): void {
    for (const waiter of this.pending.values()) waiter.reject(new PublishError(failure, message));
    this.pending.clear();
  }

  close(): void {
    clearInterval(this.sweeper);
    this.subscription.unsubscribe();
    this.failPending("unreachable", "publisher closed");
  }
}
