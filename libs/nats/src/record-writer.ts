import { headers as natsHeaders } from "nats";
import { TYPE_HEADER } from "./events.js";

/** Where a written batch was stored: what a JetStream publish acks. */
export interface BatchAck {
  seq: number;
  duplicate: boolean;
}

/** What the writer needs of a JetStream publisher (the shared JetStreamPublisher). */
export interface BatchPublisher {
  /** False while the connection to NATS is down. */
  readonly writable: boolean;
  publish(
    subject: string,
    data: Uint8Array,
    headers: ReturnType<typeof natsHeaders>,
  ): Promise<BatchAck>;
}

/** Why a record was not written, keyed on what the caller must tell its own caller. */
export type RecordWriteFailure =
  /** Nothing was stored: the stream is full (its consumers are behind). */
  | "full"
  /** Nothing was stored: JetStream refused the batch, or no stream took it. */
  | "refused"
  /** Unknown: the batch was sent, but no ack came within the retry budget; it may be stored. */
  | "unknown";

/** A record that could not be written, and whether it may be stored all the same. */
export class RecordWriteError extends Error {
  override name = "RecordWriteError";
  constructor(
    readonly failure: RecordWriteFailure,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface RecordWriterOptions {
  /** The subject the batches go to. */
  subject: string;
  /** The type header of a batch (`toolmesh.events.v1.RecordBatch`). */
  type: string;
  /** Unique to this writer's process: batches are deduplicated by `<prefix>-<n>`. */
  msgIdPrefix: string;
  /** Encodes records (already encoded) as one batch message. */
  encode(records: readonly Uint8Array[]): Uint8Array;
  /** The largest batch in bytes; a record larger than this still goes alone. */
  maxBatchBytes: number;
  /**
   * Batches sent and not yet acked at most. Records written meanwhile wait and leave together
   * in the next batch: under load concurrent calls share a write (and its fsync); at
   * concurrency 1 a record goes out at once.
   */
  maxInFlight: number;
  /**
   * How long a batch whose ack did not come (a lost connection, a nats-server restart) is sent
   * again — the same bytes under the same message id, so the stream stores it once and its ack
   * says whether it had it — before its records are given up as `unknown`.
   */
  retryForMs: number;
  /**
   * Bytes of batches given up as `unknown` that are still sent, in the background, until
   * JetStream takes them (default 16 MiB): their writers were answered, but a record that was
   * promised to be stored if it can be still is, once NATS is back. Past this, the oldest given up
   * are sent no more.
   */
  keepSendingBytes?: number;
  /** Told of a batch sent again, for a log line. */
  onRetry?(attempt: number, error: unknown): void;
  /** Classifies a publish error: `full` and `refused` stored nothing; the rest may have. */
  classify(error: unknown): "full" | "refused" | "maybe";
}

interface Entry {
  bytes: Uint8Array;
  resolve(): void;
  reject(error: Error): void;
}

interface Batch {
  entries: Entry[];
  data: Uint8Array;
  msgId: string;
  firstSentAt: number;
  /** Given up as `unknown` (its writers were answered), and still sent in the background. */
  orphan?: boolean;
}

/** The default of RecordWriterOptions.keepSendingBytes. */
const KEEP_SENDING_BYTES = 16 * 1024 * 1024;

/**
 * Group commit for records: each record written joins the next batch message, and a batch leaves
 * as soon as fewer than `maxInFlight` are waiting for their acks, so a record waits for at most
 * the fsync of the batch before it and its own. Every record's promise settles with its batch's
 * ack. A batch whose ack is lost is sent again, unchanged, until JetStream answers (stored now,
 * or a duplicate of the copy it stored before) — so a record's writer learns the truth instead of
 * guessing — and newer batches wait meanwhile, so batches are stored in the order written. A
 * batch given up after `retryForMs` is still sent in the background (adopt), out of that order.
 */
export class RecordWriter {
  private queue: Entry[] = [];
  private queuedBytes = 0;
  private readonly inFlight = new Set<Batch>();
  /** Batches whose ack was lost, oldest first, being sent again. */
  private readonly retrying: Batch[] = [];
  /** Batches given up as `unknown` and still sent in the background, and their bytes. */
  private readonly orphans = new Set<Batch>();
  private orphanBytes = 0;
  private scheduled = false;
  private numbered = 0;
  private closed = false;

  constructor(
    private readonly publisher: BatchPublisher,
    private readonly options: RecordWriterOptions,
  ) {}

  /** Writes one encoded record; resolves once the batch holding it is stored. */
  write(bytes: Uint8Array): Promise<void> {
    if (this.closed)
      return Promise.reject(new RecordWriteError("refused", "the record writer is closed"));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ bytes, resolve, reject });
      this.queuedBytes += bytes.length;
      this.schedule();
    });
  }

  /** Records written and not yet stored (queued, in flight or being sent again). */
  get backlog(): number {
    let n = this.queue.length;
    for (const batch of this.inFlight) n += batch.entries.length;
    for (const batch of this.retrying) n += batch.entries.length;
    for (const batch of this.orphans) n += batch.entries.length;
    return n;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // Everything written in this turn of the event loop joins one batch.
    setImmediate(() => {
      this.scheduled = false;
      this.send();
    });
  }

  private send(): void {
    const { maxInFlight, maxBatchBytes } = this.options;
    while (
      this.queue.length > 0 &&
      this.retrying.length === 0 &&
      this.inFlight.size < maxInFlight
    ) {
      let bytes = 0;
      let count = 0;
      for (const entry of this.queue) {
        if (count > 0 && bytes + entry.bytes.length > maxBatchBytes) break;
        bytes += entry.bytes.length;
        count++;
      }
      const entries = this.queue.splice(0, count);
      this.queuedBytes -= bytes;
      const batch: Batch = {
        entries,
        data: this.options.encode(entries.map((e) => e.bytes)),
        msgId: `${this.options.msgIdPrefix}-${++this.numbered}`,
        firstSentAt: Date.now(),
      };
      this.inFlight.add(batch);
      this.publish(batch);
    }
  }

  private publish(batch: Batch): void {
    const h = natsHeaders();
    h.set(TYPE_HEADER, this.options.type);
    h.set("Nats-Msg-Id", batch.msgId);
    this.publisher.publish(this.options.subject, batch.data, h).then(
      () => this.landed(batch),
      (error: unknown) => this.failed(batch, error),
    );
  }

  private landed(batch: Batch): void {
    if (batch.orphan) {
      this.dropOrphan(batch);
      return;
    }
    this.inFlight.delete(batch);
    const at = this.retrying.indexOf(batch);
    if (at >= 0) this.retrying.splice(at, 1);
    for (const entry of batch.entries) entry.resolve();
    this.send();
  }

  private failed(batch: Batch, error: unknown): void {
    const kind = this.options.classify(error);
    if (batch.orphan) {
      if (kind === "maybe" && !this.closed) void this.resendOrphan(batch);
      else this.dropOrphan(batch);
      return;
    }
    if (kind !== "maybe") {
      this.inFlight.delete(batch);
      const message =
        kind === "full"
          ? `the record stream is full: ${String((error as Error)?.message ?? error)}`
          : `the record stream refused the batch: ${String((error as Error)?.message ?? error)}`;
      for (const entry of batch.entries)
        entry.reject(new RecordWriteError(kind, message, { cause: error }));
      this.send();
      return;
    }
    if (Date.now() - batch.firstSentAt >= this.options.retryForMs || this.closed) {
      this.inFlight.delete(batch);
      const at = this.retrying.indexOf(batch);
      if (at >= 0) this.retrying.splice(at, 1);
      for (const entry of batch.entries)
        entry.reject(
          new RecordWriteError(
            "unknown",
            `no ack for the record batch within ${this.options.retryForMs} ms (${String((error as Error)?.message ?? error)}); it may or may not be stored`,
            { cause: error },
          ),
        );
      this.adopt(batch);
      this.send();
      return;
    }
    if (!this.retrying.includes(batch)) {
      this.retrying.push(batch);
      this.retrying.sort((a, b) => a.firstSentAt - b.firstSentAt);
    }
    this.options.onRetry?.(this.retrying.length, error);
    void this.resend(batch);
  }

  /** Sends a batch again once NATS is reachable, with a short pause between tries. */
  private async resend(batch: Batch): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 100).unref());
    while (!this.publisher.writable && !this.closed) {
      if (Date.now() - batch.firstSentAt >= this.options.retryForMs) break;
      await new Promise((resolve) => setTimeout(resolve, 100).unref());
    }
    this.publish(batch);
  }

  /**
   * Goes on sending a batch given up as `unknown`, in the background, while the bytes of such
   * batches stay under keepSendingBytes: once NATS is back it is stored (or found stored), so
   * what its writers were told — that it may yet be stored — comes true rather than stay open.
   */
  private adopt(batch: Batch): void {
    const cap = this.options.keepSendingBytes ?? KEEP_SENDING_BYTES;
    if (this.closed || this.orphanBytes + batch.data.length > cap) return;
    batch.orphan = true;
    this.orphans.add(batch);
    this.orphanBytes += batch.data.length;
    void this.resendOrphan(batch);
  }

  private dropOrphan(batch: Batch): void {
    if (this.orphans.delete(batch)) this.orphanBytes -= batch.data.length;
  }

  private async resendOrphan(batch: Batch): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 500).unref());
    while (!this.publisher.writable && !this.closed)
      await new Promise((resolve) => setTimeout(resolve, 200).unref());
    if (this.closed) this.dropOrphan(batch);
    else this.publish(batch);
  }

  /** Refuses new records; what is in flight still settles. */
  close(): void {
    this.closed = true;
    for (const entry of this.queue.splice(0))
      entry.reject(new RecordWriteError("refused", "the record writer is closed"));
    this.queuedBytes = 0;
  }
}
