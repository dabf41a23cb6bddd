import { fromBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { pullOptions, retrySetup } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { type LogHeaders, lastRecord, recordBytes } from "@toolmesh/records";
import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type StreamInfo,
} from "nats";
import { AUDIT_LOG_STREAM, logFirstSeq, logReadBatch } from "./audit-log.js";
import { fromConsumer, type LogBlock, type LogReader } from "./log-reader.js";
import { QuietReaderWatch } from "./quiet-reader-watch.js";
import { type Checkpoint, RecordIndex } from "./record-index.js";
import { type IndexRow, indexRow } from "./record-mapping.js";

/** What opening the index at start did; logged, and read by tests and the status gauges. */
export interface IndexStart {
  /** True when the index was rebuilt from the stream instead of continued. */
  rebuilt: boolean;
  /** Why it was rebuilt (missing, unreadable, another stream, behind the stream ...). */
  reason: string;
  /** The first log stream sequence (message) read at start. */
  fromSeq: number;
  /** The stream's last sequence when the service started. */
  targetSeq: number;
  /** Records read before the index had caught up: only those after the checkpoint. */
  readAtStart: number;
  /** Milliseconds from opening the index until it had caught up. */
  catchUpMs: number;
}

/**
 * Rows are written in transactions of up to this many, or after FLUSH_DELAY_MS: each transaction
 * rewrites every index page it touched, so fewer, larger ones cost less per row.
 */
const MAX_ROWS_PER_TRANSACTION = 5000;
const FLUSH_DELAY_MS = 100;
/** Rows of records this instance appended, kept until the follower reads them back. */
const MAX_EXPECTED = 8192;
/**
 * How long the log's consumer may deliver nothing while the log has more before it is replaced:
 * well past the few seconds nats.js takes to find an ordered consumer again on its own (it
 * resets one after two missed heartbeats, a second each).
 */
const STALL_MS = 10_000;

/**
 * Keeps the SQLite query index in step with the log stream. At start it opens the index and reads
 * only the records after its checkpoint; it rebuilds the index from the stream when the file is
 * missing, unreadable, of another stream, ahead of it or behind its first sequence. Then it
 * follows the stream with an ordered consumer, so it also indexes what other Audit instances
 * (or anyone) appended.
 */
export class IndexFollower {
  private index: RecordIndex | undefined;
  private messages: ConsumerMessages | undefined;
  private pending: { rows: IndexRow[]; seq: number; hash: string } = {
    rows: [],
    seq: 0,
    hash: "",
  };
  private flushTimer: NodeJS.Timeout | undefined;
  /** Rows of records this instance appended, by the stream sequence of their block. */
  private readonly expected = new Map<number, IndexRow[]>();
  private expectedRows = 0;
  private stopped = false;
  private indexedSeq = 0;
  /** The stream sequence the next block read should have. */
  private expectedSeq = 0;
  private started: IndexStart | undefined;
  private readonly seqWaiters = new Set<{ seq: number; resolve: () => void }>();
  /** Counts the consumers of the log; a loop whose consumer was replaced stops reading. */
  private generation = 0;
  /** When the log's consumer last delivered a block (or was created). */
  private deliveredAt = 0;
  private watch: QuietReaderWatch | undefined;
  private readonly stallMs: number;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      log: Logger;
      file: string;
      /** Reads blocks that have left the log from the archive. */
      reader: LogReader;
      /**
       * How long the log's consumer may deliver nothing while the log holds blocks after the
       * index's before it is replaced (STALL_MS by default).
       */
      stallMs?: number;
    },
  ) {
    this.stallMs = deps.stallMs ?? STALL_MS;
  }

  /** The open index; only after start(). */
  get records(): RecordIndex {
    if (!this.index) throw new Error("the audit index is not open yet");
    return this.index;
  }

  /** How many times the index followed the log again after its consumer went quiet. */
  get resubscribed(): number {
    return this.watch?.restarts ?? 0;
  }

  /** The last log stream sequence written to the index. */
  get lastIndexedSeq(): number {
    return this.indexedSeq;
  }

  /** How start-up went; undefined before start() resolved. */
  get startInfo(): IndexStart | undefined {
    return this.started;
  }

  /** Opens (or rebuilds) the index and resolves once it holds every record the stream held. */
  async start(): Promise<IndexStart> {
    const began = performance.now();
    const info = await retrySetup(() => this.deps.jsm.streams.info(AUDIT_LOG_STREAM));
    // The oldest block readable: the archive's first, below the log's when it has left the log.
    const first = Math.max(await this.deps.reader.floor(), 1);
    const { index, rebuildReason } = await this.open(info, first);
    this.index = index;
    const checkpoint = index.checkpoint();
    let fromSeq = checkpoint.lastSeq + 1;
    if (rebuildReason) {
      index.reset(info.created);
      fromSeq = first;
    } else {
      while (index.pruneBelow(first) > 0) {}
    }
    this.indexedSeq = fromSeq - 1;
    const targetSeq = info.state.last_seq;
    let readAtStart = 0;
    // What has left the log is read from the archive first, then the log is followed.
    const logFirst = logFirstSeq(info.state);
    for await (const block of this.deps.reader.archived(fromSeq, logFirst - 1)) {
      readAtStart += this.take(block);
      this.expectedSeq = block.seq + 1;
    }
    await this.follow(
      Math.max(fromSeq, logFirst),
      logReadBatch(info.state, 4000),
      (seq, records) => {
        if (seq <= targetSeq) readAtStart += records;
      },
    );
    await this.waitFor(targetSeq);
    this.started = {
      rebuilt: rebuildReason !== undefined,
      reason: rebuildReason ?? "",
      fromSeq,
      targetSeq,
      readAtStart,
      catchUpMs: Math.round(performance.now() - began),
    };
    return this.started;
  }

  /** Opens the file and decides whether its checkpoint can be continued. */
  private async open(
    info: StreamInfo,
    first: number,
  ): Promise<{ index: RecordIndex; rebuildReason: string | undefined }> {
    const { file, log } = this.deps;
    const { index, rebuilt } = await RecordIndex.open(file, log);
    return {
      index,
      rebuildReason: rebuilt ?? (await this.staleness(index.checkpoint(), info, first)),
    };
  }

  /**
   * Why a checkpoint cannot be continued on this log, or undefined when it can; `first` is the
   * oldest block readable (archive or log).
   */
  private async staleness(
    cp: Checkpoint,
    info: StreamInfo,
    first: number,
  ): Promise<string | undefined> {
    const { state } = info;
    if (cp.streamCreated === "") return "missing";
    if (cp.streamCreated !== info.created) return "another stream";
    if (cp.lastSeq > state.last_seq) return "ahead of the stream";
    if (cp.lastSeq + 1 < first) return "behind the log's oldest kept block";
    if (cp.lastSeq >= first) {
      const stored = await this.deps.reader.block(cp.lastSeq);
      const hash = stored ? safeHash(stored.headers, stored.data) : "";
      if (hash !== cp.lastHash) return "checkpoint does not match the log";
    }
    return undefined;
  }

  /**
   * Reads the stream from `fromSeq` on, indefinitely, writing rows in batches. A block that left
   * the log before the consumer reached it is read from the archive. A QuietReaderWatch follows
   * the log again from where the index stopped when its consumer goes quiet as the log grows.
   */
  private async follow(
    fromSeq: number,
    batch: number,
    onMessage: (seq: number, records: number) => void,
  ): Promise<void> {
    this.expectedSeq = fromSeq;
    await this.subscribe(batch, onMessage);
    this.watch = new QuietReaderWatch(
      {
        expectedSeq: () => this.expectedSeq,
        deliveredAt: () => this.deliveredAt,
        lastSeq: async () => (await this.deps.jsm.streams.info(AUDIT_LOG_STREAM)).state.last_seq,
        readAgain: async () => {
          // Not awaited: closing a lost consumer may wait on the server; its loop stops either way
          // (subscribe moves the generation on).
          void this.messages?.close().catch(() => {});
          await this.subscribe(batch, onMessage);
        },
      },
      this.stallMs,
      this.deps.log,
    );
    this.watch.start();
  }

  /** Reads the log from expectedSeq on with a new ordered consumer. */
  private async subscribe(
    batch: number,
    onMessage: (seq: number, records: number) => void,
  ): Promise<void> {
    const generation = ++this.generation;
    const consumer = await this.deps.js.consumers.get(AUDIT_LOG_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.expectedSeq,
    });
    const messages = await consumer.consume(pullOptions({ max_messages: batch }));
    this.messages = messages;
    this.deliveredAt = Date.now();
    void (async () => {
      try {
        for await (const msg of messages) {
          // A consumer replaced by the watch may still hand over what it had in hand.
          if (generation !== this.generation) break;
          this.deliveredAt = Date.now();
          if (msg.seq < this.expectedSeq) continue;
          if (msg.seq > this.expectedSeq) {
            for await (const block of this.deps.reader.archived(this.expectedSeq, msg.seq - 1))
              onMessage(block.seq, this.take(block));
          }
          onMessage(msg.seq, this.take(fromConsumer(msg)));
          this.expectedSeq = msg.seq + 1;
        }
      } catch (error) {
        // The watch follows the log again once it sees the index fall behind.
        this.deps.log.warn({ err: error }, "the audit index's reader of the log stopped");
      }
    })();
  }

  /**
   * The row of a record this instance just appended in the block at `seq`, so reading it back
   * from the stream costs a byte comparison instead of a decode.
   */
  expect(record: AuditRecord, seq: number, pos: number, data: Uint8Array): void {
    if (this.expectedRows >= MAX_EXPECTED) {
      this.expected.clear();
      this.expectedRows = 0;
    }
    const rows = this.expected.get(seq);
    const row = indexRow(record, seq, pos, data, 0);
    if (rows) rows.push(row);
    else this.expected.set(seq, [row]);
    this.expectedRows++;
  }

  /** Adds the rows of one log message to the pending transaction; returns how many records. */
  private take(msg: LogBlock): number {
    const known = this.expected.get(msg.seq);
    if (known) {
      this.expected.delete(msg.seq);
      this.expectedRows -= known.length;
    }
    let slices: Uint8Array[] = [];
    try {
      slices = recordBytes(msg.headers, msg.data);
    } catch (error) {
      this.deps.log.error({ err: error, seq: msg.seq }, "undecodable message in the audit log");
    }
    const rows =
      known && sameRecords(known, slices) ? known : this.decodeRows(msg.seq, msg.timeNanos, slices);
    for (const row of rows) this.pending.rows.push(row);
    const last = rows.at(-1);
    if (last) this.pending.hash = last.hash;
    this.pending.seq = msg.seq;
    if (this.pending.rows.length >= MAX_ROWS_PER_TRANSACTION) this.flush();
    else if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    return rows.length;
  }

  /** The rows of records read from the stream, each decoded; one that does not decode is left out. */
  private decodeRows(seq: number, storedNanos: number, slices: Uint8Array[]): IndexRow[] {
    const rows: IndexRow[] = [];
    for (const [pos, data] of slices.entries()) {
      try {
        const record = fromBinary(AuditRecordSchema, data);
        rows.push(indexRow(record, seq, pos, data, storedNanos));
      } catch (error) {
        this.deps.log.error({ err: error, seq }, "undecodable record in the audit log");
      }
    }
    return rows;
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const { rows, seq, hash } = this.pending;
    if (seq <= this.indexedSeq || !this.index) return;
    this.pending = { rows: [], seq, hash };
    try {
      this.index.add(rows, seq, hash);
    } catch (error) {
      // The checkpoint did not move, so a restart reads these records again; stopping here
      // keeps the index from skipping them.
      this.deps.log.error({ err: error, seq }, "cannot write the audit index; restart to retry");
      void this.messages?.close();
      return;
    }
    this.indexedSeq = seq;
    for (const waiter of this.seqWaiters) {
      if (waiter.seq <= seq) {
        this.seqWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  /** Resolves once the index holds the record at `seq` (or anything later). */
  waitFor(seq: number): Promise<void> {
    if (this.indexedSeq >= seq) return Promise.resolve();
    return new Promise((resolve) => this.seqWaiters.add({ seq, resolve }));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.watch?.stop();
    this.generation++;
    await this.messages?.close();
    this.flush();
    this.index?.close();
  }
}

/** True when a block read back holds exactly the records this instance appended in it. */
function sameRecords(known: IndexRow[], slices: Uint8Array[]): boolean {
  if (known.length !== slices.length) return false;
  return known.every((row, i) => Buffer.compare(row.data, slices[i] as Uint8Array) === 0);
}

/** The chain hash of a log message's last record, or "" when it does not decode. */
function safeHash(headers: LogHeaders | undefined, data: Uint8Array): string {
  try {
    return lastRecord(headers, data)?.hash ?? "";
  } catch {
    return "";
  }
}
