import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  headers as natsHeaders,
  type Subscription,
} from "nats";
import { newInbox } from "./connect.js";
import { TYPE_HEADER } from "./events.js";
import {
  BETWEEN_LEADERS_BUDGET_MS,
  betweenLeadersDelay,
  JetStreamApiCodes,
} from "./jetstream-errors.js";

/** Where JetStream stored a message. */
export interface StoredAck {
  /** The stream sequence of the message (of the copy stored before, for a duplicate). */
  seq: number;
  /** True when the stream held its Nats-Msg-Id already: nothing new was stored. */
  duplicate: boolean;
}

/**
 * Why a publish failed:
 * - `unreachable`: the connection to NATS is down or closed; a message sent before the break
 *   may be stored all the same;
 * - `timeout`: no ack within the ack timeout: the message may or may not be stored;
 * - `full`: the stream refused it for lack of room (at its limit, or the server out of storage);
 * - `no-stream`: no stream took it (no stream listens on the subject, or none has a leader) for
 *   as long as the between-leaders budget: nothing was stored;
 * - `refused`: JetStream refused it for another reason (its `api_error` says which).
 */
export type PublishFailure = "unreachable" | "timeout" | "full" | "no-stream" | "refused";

/** JetStream's refusal of a publish, as its ack carries it. */
export interface PublishApiError {
  code: number;
  err_code: number;
  description: string;
}

/** Raised when a publish is refused, unanswered, or cannot be sent. */
export class PublishError extends Error {
  override name = "PublishError";
  constructor(
    readonly failure: PublishFailure,
    message: string,
    /** The refusal JetStream answered with, if any: jetStreamErrorCode reads its `err_code`. */
    readonly api_error?: PublishApiError,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Room in the streams messages go to (the Dispatcher's StoreCapacity). */
export interface PublishCapacity {
  /** Why the store has no room now, or undefined. */
  readonly full: string | undefined;
  /** Told of each message before it is sent, with its size on the stream (roughly). */
  consume(subject: string, bytes: number): void;
  /** Told when a stream refused a message for lack of room. */
  refused(reason: string): void;
}

export interface PublisherOptions {
  /** How long a publish waits for its ack, counted from its first send, resends included. */
  ackTimeoutMs: number;
  /**
   * What a lost connection does to publishes waiting for acks: `fail` them at once as
   * `unreachable`, and refuse new ones until it is back (a caller that must answer now); or let
   * them `wait` for their ack or their timeout (nats.js sends what was published meanwhile once
   * it reconnects). `wait` by default.
   */
  whenDisconnected?: "fail" | "wait";
  /**
   * How long a message no stream took is sent again (from its first send), within the ack
   * timeout: the shared between-leaders budget by default.
   */
  betweenLeadersBudgetMs?: number;
  /** Told of every message's size and of refusals for lack of room. */
  capacity?: PublishCapacity;
}

/** A message to publish. */
export interface OutgoingMessage {
  subject: string;
  data: Uint8Array;
  headers?: MsgHdrs;
}

/** A message waiting for its ack; in `pending` in the order of first sends. */
interface Pending {
  readonly id: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  /** The messages of its atomic batch before it (it commits them), sent without a reply. */
  readonly preceding?: readonly OutgoingMessage[];
  /** When it was first sent: the ack timeout and the between-leaders budget count from here. */
  readonly sentAt: number;
  resends: number;
  resolve(ack: StoredAck): void;
  reject(error: Error): void;
}

/** The JSON JetStream answers a publish with. */
interface PubAckReply {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: PublishApiError;
}

/** Refusals that mean "no room": a caller refuses new work until there is. */
const FULL_CODES: ReadonlySet<number> = new Set([
  JetStreamApiCodes.StoreFailed,
  JetStreamApiCodes.InsufficientResources,
]);

/** Bytes a message takes on a stream besides its payload and subject (headers, framing). */
const MESSAGE_OVERHEAD = 128;

const decoder = new TextDecoder();

/**
 * JetStream publishing for hot paths: plain publishes with a reply subject under one inbox
 * subscription, acks matched by a per-publisher id, unanswered ones swept on a timer. nats.js's
 * `js.publish` makes a request, a timer and a stack-captured error per message, which measured as
 * the largest CPU cost of the Dispatcher (after its sockets) and a third of Audit's per record.
 *
 * Every message queued in one turn of the event loop leaves in one socket write. A message no
 * stream took (503 "no responders": no stream listens, or none has a leader this moment) stored
 * nothing, so it is sent again, keeping its place, with the between-leaders backoff. A batch
 * writer sits on `publish`: a message of many records (or an atomic batch's messages, by their
 * headers) queued in the same turn as the rest leaves in the same write.
 */
export class JetStreamPublisher {
  private readonly inbox: string;
  private readonly pending = new Map<number, Pending>();
  private readonly subscription: Subscription;
  private readonly sweeper: NodeJS.Timeout;
  private readonly timeoutMs: number;
  private readonly budgetMs: number;
  private readonly failOnDisconnect: boolean;
  private readonly capacity: PublishCapacity | undefined;
  private next = 0;
  private outbox: Pending[] = [];
  private flushScheduled = false;
  private connected = true;

  constructor(
    private readonly nc: NatsConnection,
    options: PublisherOptions,
  ) {
    this.timeoutMs = options.ackTimeoutMs;
    this.budgetMs = Math.min(
      options.betweenLeadersBudgetMs ?? BETWEEN_LEADERS_BUDGET_MS,
      options.ackTimeoutMs,
    );
    this.failOnDisconnect = options.whenDisconnected === "fail";
    this.capacity = options.capacity;
    // Under the connection's own inbox prefix: nats-server lets only this process read its acks.
    this.inbox = newInbox(nc);
    this.subscription = nc.subscribe(`${this.inbox}.*`, {
      callback: (error, msg) => {
        if (!error) this.onAck(msg);
      },
    });
    this.sweeper = setInterval(
      () => this.sweep(),
      Math.min(1000, Math.max(100, this.timeoutMs / 10)),
    );
    this.sweeper.unref();
    void this.followConnection();
  }

  /** False while the connection to NATS is down: a publish now would only wait or fail. */
  get writable(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  /** The largest message NATS carries (the server's max_payload). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? 1024 * 1024;
  }

  /** Why the store has no room now, as the capacity hook says, or undefined. */
  get full(): string | undefined {
    return this.capacity?.full;
  }

  /** Publishes a message; resolves once a stream stored it, rejects with a PublishError. */
  publish(subject: string, data: Uint8Array, headers?: MsgHdrs): Promise<StoredAck> {
    return this.send(subject, data, headers);
  }

  private send(
    subject: string,
    data: Uint8Array,
    headers: MsgHdrs | undefined,
    preceding?: readonly OutgoingMessage[],
  ): Promise<StoredAck> {
    if (this.failOnDisconnect && !this.writable) {
      return Promise.reject(
        new PublishError("unreachable", `NATS is unreachable; cannot write to ${subject}`),
      );
    }
    const id = ++this.next;
    for (const m of preceding ?? [])
      this.capacity?.consume(m.subject, m.data.length + m.subject.length + MESSAGE_OVERHEAD);
    this.capacity?.consume(subject, data.length + subject.length + MESSAGE_OVERHEAD);
    return new Promise<StoredAck>((resolve, reject) => {
      const message: Pending = {
        id,
        subject,
        data,
        headers,
        ...(preceding ? { preceding } : {}),
        sentAt: Date.now(),
        resends: 0,
        resolve,
        reject,
      };
      this.pending.set(id, message);
      this.queue(message);
    });
  }

  /**
   * Publishes messages as one JetStream atomic batch (the stream allows it: `allow_atomic`):
   * JetStream stores them all in one commit, or none. Each gets the batch headers, set on its own
   * headers (not a copy: to publish the same content again, build its message again); only the
   * last, which commits the batch, is acked, and the promise settles with its ack (its sequence is the
   * last message's). A batch no stream took is sent again whole. JetStream refuses a whole batch
   * when one of its messages repeats a Nats-Msg-Id it holds (10201), and limits a batch to 1,000
   * messages by default.
   */
  publishAtomic(batchId: string, messages: readonly OutgoingMessage[]): Promise<StoredAck> {
    const last = messages.at(-1);
    if (!last)
      return Promise.reject(new PublishError("refused", "an atomic batch needs a message"));
    // Copying each message's headers was a fifth of what Callback allocated.
    const stamped = messages.map((m, i) => {
      const h = m.headers ?? natsHeaders();
      h.set("Nats-Batch-Id", batchId);
      h.set("Nats-Batch-Sequence", String(i + 1));
      if (i === messages.length - 1) h.set("Nats-Batch-Commit", "1");
      return m.headers ? m : { ...m, headers: h };
    });
    const commit = stamped.at(-1) as OutgoingMessage;
    return this.send(commit.subject, commit.data, commit.headers, stamped.slice(0, -1));
  }

  /** Publishes a Protobuf message, its type in TYPE_HEADER; `msgId` makes JetStream store it once. */
  publishMessage<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options?: { msgId?: string },
  ): Promise<StoredAck> {
    const h = natsHeaders();
    h.set(TYPE_HEADER, schema.typeName);
    if (options?.msgId) h.set("Nats-Msg-Id", options.msgId);
    return this.publish(subject, toBinary(schema, value), h);
  }

  /** Stops taking acks; what still waits for one fails as unreachable. */
  close(): void {
    clearInterval(this.sweeper);
    this.subscription.unsubscribe();
    this.failPending("publisher closed before JetStream acked");
  }

  /** Tracks the connection; in `fail` mode, fails what waits for an ack the moment it is lost. */
  private async followConnection(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === "disconnect") {
        this.connected = false;
        // Acks of messages sent before the break may never come; their callers should not wait.
        if (this.failOnDisconnect) {
          this.failPending("the connection to NATS was lost before JetStream acked");
        }
      } else if (status.type === "reconnect") {
        this.connected = true;
      }
    }
  }

  private queue(message: Pending): void {
    this.outbox.push(message);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  /**
   * Hands every message queued during this turn of the event loop to the connection at once,
   * so they leave in one socket write: on a loaded machine a write costs far more than a message.
   */
  private readonly flush = () => {
    this.flushScheduled = false;
    const batch = this.outbox;
    this.outbox = [];
    for (const m of batch) {
      // Failed meanwhile (a lost connection, closed): not sent.
      if (this.pending.get(m.id) !== m) continue;
      try {
        for (const p of m.preceding ?? [])
          this.nc.publish(p.subject, p.data, p.headers ? { headers: p.headers } : undefined);
        this.nc.publish(m.subject, m.data, { reply: `${this.inbox}.${m.id}`, headers: m.headers });
      } catch (error) {
        const failure = this.nc.isClosed() ? "unreachable" : "refused";
        this.fail(
          m,
          new PublishError(failure, `cannot publish to ${m.subject}: ${String(error)}`, undefined, {
            cause: error,
          }),
        );
      }
    }
  };

  private onAck(msg: Msg): void {
    const id = Number(msg.subject.slice(this.inbox.length + 1));
    const message = this.pending.get(id);
    if (!message) return;
    const status = msg.headers?.code ?? 0;
    if (status === 503) {
      this.betweenLeaders(message, "503 no responders");
      return;
    }
    if (status >= 400) {
      this.fail(
        message,
        new PublishError("refused", `NATS answered ${status} to a publish on ${message.subject}`),
      );
      return;
    }
    let reply: PubAckReply;
    try {
      reply = JSON.parse(decoder.decode(msg.data)) as PubAckReply;
    } catch (error) {
      this.fail(
        message,
        new PublishError("refused", "JetStream sent an ack that is not JSON", undefined, {
          cause: error,
        }),
      );
      return;
    }
    const refusal = reply.error;
    if (refusal === undefined) {
      this.pending.delete(id);
      message.resolve({ seq: reply.seq ?? 0, duplicate: reply.duplicate === true });
      return;
    }
    if (refusal.err_code === JetStreamApiCodes.ClusterNotAvailable) {
      this.betweenLeaders(message, refusal.description);
      return;
    }
    const stream = reply.stream ? `stream ${reply.stream}` : "JetStream";
    if (FULL_CODES.has(refusal.err_code)) {
      const why = `${stream} has no room for the message: ${refusal.description}`;
      this.capacity?.refused(why);
      this.fail(message, new PublishError("full", why, refusal));
      return;
    }
    this.fail(
      message,
      new PublishError("refused", `${stream} refused the message: ${refusal.description}`, refusal),
    );
  }

  /**
   * No stream took the message, so nothing was stored: it is sent again after the between-leaders
   * backoff, keeping its place in `pending`, until the budget is spent.
   */
  private betweenLeaders(message: Pending, why: string): void {
    const delayMs = betweenLeadersDelay(message.resends, message.sentAt, this.budgetMs);
    if (delayMs === undefined) {
      this.fail(
        message,
        new PublishError(
          "no-stream",
          `no stream took the message on ${message.subject} within ${this.budgetMs} ms (${why}); nothing was stored`,
        ),
      );
      return;
    }
    message.resends++;
    setTimeout(() => {
      if (this.pending.get(message.id) === message) this.queue(message);
    }, delayMs).unref();
  }

  private fail(message: Pending, error: PublishError): void {
    this.pending.delete(message.id);
    message.reject(error);
  }

  private sweep(): void {
    const limit = Date.now() - this.timeoutMs;
    for (const message of this.pending.values()) {
      // In the order of first sends: the rest are younger.
      if (message.sentAt > limit) break;
      this.fail(
        message,
        new PublishError(
          "timeout",
          `JetStream did not ack within ${this.timeoutMs} ms; the message may or may not be stored`,
        ),
      );
    }
  }

  private failPending(why: string): void {
    for (const message of this.pending.values()) {
      message.reject(new PublishError("unreachable", why));
    }
    this.pending.clear();
  }
}
