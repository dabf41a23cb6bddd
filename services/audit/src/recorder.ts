import { callFields, type Logger } from "@toolmesh/log";
import {
  ensureConsumer,
  JetStreamPublisher,
  pullOptions,
  retrySetup,
  streamNames,
} from "@toolmesh/nats";
import { recordKey } from "@toolmesh/records";
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
import {
  type AppendRoom,
  BlockAppender,
  type Flight,
  type StoredRecord,
} from "./block-appender.js";
import { mergedCall, StartHolds } from "./call-merge.js";
import { type ReceivedRecord, recordsToChain } from "./record-mapping.js";

export type { StoredRecord } from "./block-appender.js";

/** The durable consumer on TOOLMESH_RECORDS; a restarted service resumes where it stopped. */
export const AUDIT_CONSUMER = "audit";

const SOURCE_STREAM = streamNames.records;
/** Records chained per batch at most: appended as one block (or a few), acked together. */
const MAX_BATCH = 512;
/**
 * Batches in flight at once on a log of one replica: the next is chained and published while the
 * acks of the ones before it (each an fsync on nats-server) are on their way. On a replicated log
 * one is (see BlockAppender).
 */
const PIPELINE_DEPTH = 3;
/**
 * Unacked source messages the consumer hands out. Each is a batch of records (up to NATS
 * max_payload), so the count is small and the bytes are bounded too.
 */
const MAX_ACK_PENDING = 256;
/** What one pull asks for at most, in bytes of batches. */
const PULL_BYTES = 16 * 1024 * 1024;
const MAX_ATTEMPTS = 20;
/**
 * Source ids of records this instance stored lately, so a source message redelivered before the
 * index has read its record back (an ack lost, or ack_wait passed while its block was appended)
 * is not stored twice: a block's message id covers the whole block, not each record.
 */
const MAX_RECENT = 16_384;
/** Queued bytes past which the chain writer takes the work at once instead of lingering. */
const LINGER_UNTIL_BYTES = 64 * 1024;
/** Room left in a message for its headers when a block is sized to NATS max_payload. */
const HEADER_ROOM = 4096;

/** A source message (a batch of records): acked once every record of it is stored. */
interface Source {
  msg: JsMsg;
  /** Its records not yet stored (or skipped as stored before). */
  left: number;
  /** Set once it was handed back for redelivery: nothing more is done with it. */
  released: boolean;
}

/**
 * A record to chain, its store-once keys and the source messages it came in: one of each, or two
 * for a call's start and end chained as one record (call-merge.ts).
 */
type Pending = ReceivedRecord & { keys: string[]; sources: Source[] };

/** A flight of records, with their source messages. */
type Batch = { flight: Flight; pending: Pending[] };

/**
 * Takes records from the audit stream, redacts their arguments, chains them and appends them to
 * the log stream in blocks (AuditLogBlock), so a batch costs one stored write, not one per record,
 * and on a log of one replica several batches are in flight at once (BlockAppender keeps them from forking the chain). A
 * record whose append lost a race is chained again on the new head, with every one sent after it.
 * A block's message id is derived from its records' source ids, and records the index (or this
 * instance, lately) already stored are skipped, so a redelivery is stored once.
 */
export class AuditRecorder {
  private messages: ConsumerMessages | undefined;
  private readonly queue: JsMsg[] = [];
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private publisher: JetStreamPublisher | undefined;
  private appender: BlockAppender | undefined;
  /** Source ids stored lately. */
  private readonly recent = new Set<string>();
  /**
   * Source ids in flight now (held, or sent and not yet landed), each with the pending record
   * that carries it: a message delivered again meanwhile joins that record's sources, so it is
   * acked only once the record is stored, and handed back with it.
   */
  private readonly inFlight = new Map<string, Pending>();
  /** Starts waiting a moment for their end, to be chained with it as one record. */
  private readonly holds: StartHolds<Pending>;
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      nc: NatsConnection;
      js: JetStreamClient;
      jsm: JetStreamManager;
      /** True when the index holds a record with this source id (of this call). */
      isStored: (id: string, callId: string) => boolean;
      /** Runs the isStored lookups of one run of messages together (one read transaction). */
      readTogether?: <T>(read: () => T) => T;
      redact: (value: unknown) => unknown;
      log: Logger;
      /** Told of each record this instance appended. */
      onStored?: (stored: StoredRecord) => void;
      /** Asked before each append, so none pushes a block out of the log too soon. */
      room?: AppendRoom;
      /** How long a little work waits for more before it is chained (TOOLMESH_AUDIT_LINGER_MS). */
      lingerMs?: number;
      /** How long a call's start waits for its end, to chain both as one record (0: never). */
      holdMs?: number;
    },
  ) {
    this.holds = new StartHolds<Pending>(deps.holdMs ?? 0, (start, end) => {
      const merged: Pending = {
        ...mergedCall(start, end),
        keys: [...end.keys, ...start.keys],
        sources: [...end.sources, ...start.sources],
      };
      for (const key of merged.keys) if (this.inFlight.has(key)) this.inFlight.set(key, merged);
      return merged;
    });
  }

  async start(): Promise<void> {
    const { nc, js, jsm, log } = this.deps;
    // A block sent before a lost connection may be acked once it is back: its ack is awaited
    // (an append that gets none is read back with the head, see BlockAppender).
    this.publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 10_000, whenDisconnected: "wait" });
    this.appender = new BlockAppender({
      jsm,
      publisher: this.publisher,
      log,
      maxBlockBytes: Math.max((nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM, 1024),
      onStored: (stored) => this.stored(stored),
      onFound: (ids) => {
        for (const id of ids) this.remember(id);
      },
      room: this.deps.room,
    });
    await this.appender.refreshHead();
    // An existing consumer (from an earlier version) is brought to these limits.
    await ensureConsumer(jsm, SOURCE_STREAM, {
      durable_name: AUDIT_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Short, so messages held by a killed instance come back within seconds.
      ack_wait: nanos(5_000),
      max_ack_pending: MAX_ACK_PENDING,
    });
    const consumer = await retrySetup(() => js.consumers.get(SOURCE_STREAM, AUDIT_CONSUMER));
    // A batch is at most NATS max_payload: the bytes a pull asks for bound the memory it takes.
    const messages = await consumer.consume(pullOptions({ max_bytes: PULL_BYTES }));
    this.messages = messages;
    void (async () => {
      for await (const msg of messages) {
        this.queue.push(msg);
        this.wake?.();
      }
      this.stopped = true;
      this.wake?.();
    })();
    // Held starts keep their batches from being delivered again, and are chained alone once due.
    const holdMs = this.deps.holdMs ?? 0;
    if (holdMs > 0) {
      this.holdTimer = setInterval(
        () => {
          for (const source of new Set(this.holds.items().flatMap((p) => p.sources)))
            if (!source.released) source.msg.working();
          if (this.holds.due()) this.wake?.();
        },
        Math.max(50, Math.floor(holdMs / 4)),
      );
      this.holdTimer.unref();
    }
    this.loop = this.chainLoop();
  }

  private async chainLoop(): Promise<void> {
    const flying: Batch[] = [];
    for (;;) {
      if (this.stopped && flying.length === 0) {
        // A writer that stopped (its lease lost, or shutting down) appends nothing more: what it
        // holds goes back to the stream, for the next chain writer.
        for (const msg of this.queue.splice(0)) msg.nak();
        return;
      }
      const depth = this.appender?.pipelined ? PIPELINE_DEPTH : 1;
      if (
        flying.length > 0 &&
        (this.stopped || flying.length >= depth || this.queue.length === 0)
      ) {
        await this.landOldest(flying);
        continue;
      }
      if (this.queue.length === 0 && !this.holds.due()) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        // Let the messages already received join this batch; when little came, wait a moment for
        // more: at a low rate each block would otherwise hold one record, and a block costs a
        // stored write and its headers (hundreds of bytes) whatever it holds. Off the calls' path.
        await new Promise((resolve) => setImmediate(resolve));
        const lingerMs = this.deps.lingerMs ?? 0;
        if (lingerMs > 0 && this.queuedBytes() < LINGER_UNTIL_BYTES)
          await new Promise((resolve) => setTimeout(resolve, lingerMs));
        continue;
      }
      const appender = this.appender as BlockAppender;
      if (appender.stale && flying.length === 0) {
        // Before admitting: reading the head again also reads back what an unanswered append
        // stored, so its records, handed back, are not chained a second time.
        try {
          await appender.refreshHead();
        } catch (error) {
          this.deps.log.warn({ err: error }, "cannot read the audit log's head; will retry");
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
      }
      const pending = [...this.holds.expired(), ...this.admitUpTo(MAX_BATCH, appender)];
      if (pending.length === 0) continue;
      try {
        // The flights in flight count against the log's room until they land, and only this
        // loop lands them: waiting for room with them still up would wait for ever.
        if (flying.length > 0 && !appender.hasRoomFor(pending)) {
          while (flying.length > 0) await this.landOldest(flying);
          if (appender.stale) await appender.refreshHead();
        }
        // While the log has no room, the records waiting are kept from being redelivered.
        await appender.waitForRoom(pending, () => {
          for (const source of new Set(pending.flatMap((p) => p.sources))) source.msg.working();
          for (const msg of this.queue) msg.working();
        });
        flying.push({ flight: appender.send(pending), pending });
      } catch (error) {
        await this.giveBack(pending, error);
      }
    }
  }

  /**
   * Admits queued source messages until about `most` records are pending or they would take
   * more than a flight may (a quarter of a small log): at least one message.
   */
  private admitUpTo(most: number, appender: BlockAppender): Pending[] {
    const pending: Pending[] = [];
    const limit = appender.maxFlightBytes;
    while (this.queue.length > 0 && pending.length < most) {
      if (pending.length > 0 && appender.flightBytes(pending) >= limit) break;
      pending.push(...this.admit(this.queue.splice(0, 1)));
    }
    return pending;
  }

  /**
   * The records of a run of source messages that are new: each message is a batch of records
   * (one record for a message of the stream written before batches), decoded, redacted, and kept
   * only when it is not stored or in flight already. A message whose records are all stored is
   * acked at once.
   */
  private admit(batch: JsMsg[]): Pending[] {
    const { readTogether } = this.deps;
    return readTogether ? readTogether(() => this.admitEach(batch)) : this.admitEach(batch);
  }

  private admitEach(batch: JsMsg[]): Pending[] {
    const { isStored, redact, log } = this.deps;
    const pending: Pending[] = [];
    for (const msg of batch) {
      let received: ReceivedRecord[];
      try {
        received = recordsToChain(msg, redact);
      } catch (error) {
        log.error({ err: error, subject: msg.subject, seq: msg.seq }, "undecodable record batch");
        msg.term();
        continue;
      }
      const source: Source = { msg, left: 0, released: false };
      for (const r of received) {
        const key = recordKey(r.record);
        // Delivered again while an earlier delivery's record is in flight: this message waits
        // for that record — acked once it is stored, handed back with it if it is not — for the
        // earlier message may have been handed back already and not come again.
        const flying = this.inFlight.get(key);
        if (flying) {
          flying.sources.push(source);
          source.left++;
          continue;
        }
        // Stored already — a start also when it was chained with its end as one record (the
        // index knows).
        if (this.recent.has(key) || isStored(key, r.record.callId)) continue;
        const p: Pending = { ...r, keys: [key], sources: [source] };
        this.inFlight.set(key, p);
        source.left++;
        pending.push(p);
      }
      if (source.left === 0) msg.ack();
    }
    return this.holds.take(pending);
  }

  /**
   * Lands the oldest batch in flight and acks what it stored. When an append failed, every batch
   * sent after it was chained on it: they are landed too, and what is left of them all is chained
   * again on a fresh head, in order.
   */
  private async landOldest(flying: Batch[]): Promise<void> {
    const appender = this.appender as BlockAppender;
    const oldest = flying.shift();
    if (!oldest) return;
    const landing = await appender.land(oldest.flight);
    const left = this.acked(oldest.pending, landing.stored);
    let error = landing.error;
    if (left.length === 0 && error === undefined) return;
    for (const { flight, pending } of flying.splice(0)) {
      const landing = await appender.land(flight);
      left.push(...this.acked(pending, landing.stored));
      error ??= landing.error;
    }
    try {
      if (error !== undefined) throw error;
      await this.appendUntilStored(left);
    } catch (failure) {
      await this.giveBack(
        left.filter((p) => p.keys.some((k) => this.inFlight.has(k))),
        failure,
      );
    }
  }

  /** Appends records one flight at a time until all are stored; throws if the head keeps moving. */
  private async appendUntilStored(todo: Pending[]): Promise<void> {
    const appender = this.appender as BlockAppender;
    for (let attempt = 1; todo.length > 0; attempt++) {
      if (attempt > MAX_ATTEMPTS)
        throw new Error("the audit log head kept moving; giving up for now");
      if (this.stopped) throw new Error("the chain writer stopped; its records go to the next one");
      await appender.refreshHead();
      todo = this.notFound(todo);
      if (todo.length === 0) return;
      await appender.waitForRoom(todo);
      const landing = await appender.land(appender.send(todo));
      todo = this.acked(todo, landing.stored);
      if (landing.error !== undefined) throw landing.error;
    }
  }

  /** Acks the records found in the log since (read back with the head); returns the others. */
  private notFound(todo: Pending[]): Pending[] {
    return this.acked(
      todo,
      todo.map((p) => this.recent.has(p.keys[0] as string)),
    );
  }

  /** Counts stored records off their source messages, acking each one done; returns the others. */
  private acked(pending: Pending[], stored: boolean[]): Pending[] {
    const left: Pending[] = [];
    for (const [i, p] of pending.entries()) {
      if (!stored[i]) {
        left.push(p);
        continue;
      }
      for (const key of p.keys) {
        this.inFlight.delete(key);
        this.remember(key);
      }
      for (const source of p.sources) if (--source.left === 0 && !source.released) source.msg.ack();
    }
    return left;
  }

  /**
   * Hands records back to the stream for a later try, after a pause: their source messages are
   * redelivered whole, and the records of them already stored are skipped then.
   */
  private async giveBack(pending: Pending[], error: unknown): Promise<void> {
    this.deps.log.warn({ err: error }, "cannot append audit records now; will retry");
    for (const p of pending) {
      for (const key of p.keys) this.inFlight.delete(key);
      for (const source of p.sources) {
        if (source.released) continue;
        source.released = true;
        source.msg.nak(1000);
      }
    }
    (this.appender as BlockAppender).stale = true;
    if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 1000));
  }

  private remember(id: string): void {
    this.recent.add(id);
    if (this.recent.size > MAX_RECENT) {
      for (const old of this.recent) {
        this.recent.delete(old);
        if (this.recent.size <= MAX_RECENT / 2) break;
      }
    }
  }

  private stored(stored: StoredRecord): void {
    const { record, seq } = stored;
    this.remember(recordKey(record));
    this.deps.onStored?.(stored);
    if (this.deps.log.isLevelEnabled("debug")) {
      this.deps.log.debug(
        { ...callFields(record), sequence: record.sequence, seq },
        "audit record stored",
      );
    }
  }

  private queuedBytes(): number {
    let bytes = 0;
    for (const msg of this.queue) bytes += msg.data.length;
    return bytes;
  }

  /** Stops taking records and waits for the batches in hand. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.holdTimer);
    // Unacknowledged, the held starts' batches come back to the next chain writer.
    for (const p of this.holds.drain()) for (const key of p.keys) this.inFlight.delete(key);
    await this.messages?.close();
    this.wake?.();
    await this.loop;
    this.publisher?.close();
  }
}
