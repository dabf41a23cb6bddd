import { type ArchivedBlock, type ArchiveReader, blockHeaders } from "@toolmesh/archive";
import { JetStreamApiCodes, jetStreamErrorCode, pullOptions } from "@toolmesh/nats";
import { type LoggedRecord, type LogHeaders, readLogMessage } from "@toolmesh/records";
import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StoredMsg,
} from "nats";
import { AUDIT_LOG_STREAM, logFirstSeq, logReadBatch } from "./audit-log.js";

/** One message of the audit log, read from the log stream or from the archive. */
export interface LogBlock {
  /** Its stream sequence. */
  seq: number;
  headers: LogHeaders | undefined;
  data: Uint8Array;
  /** When the stream stored it, ns since the epoch. */
  timeNanos: number;
}

/**
 * Reads the audit log whole: a block from the log stream while it holds it, from the archive
 * once it has left. Everything that reads records back (the chain verifier, the index rebuild,
 * queries) reads through here, so nothing depends on where a block is now.
 */
export class LogReader {
  /** The log's first sequence as last seen: a block below it is read from the archive first. */
  private logFirst = 0;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      archive: ArchiveReader;
    },
  ) {}

  get archive(): ArchiveReader {
    return this.deps.archive;
  }

  /** The oldest stream sequence readable: the archive's first, or the log's when it is older. */
  async floor(): Promise<number> {
    return (await this.bounds()).floor;
  }

  /** The oldest readable stream sequence and the log's last one (0 while it is empty). */
  async bounds(): Promise<{ floor: number; last: number }> {
    const [archived, { state }] = await Promise.all([
      this.deps.archive.firstSeq(),
      this.deps.jsm.streams.info(AUDIT_LOG_STREAM),
    ]);
    this.logFirst = logFirstSeq(state);
    const floor = archived === undefined ? this.logFirst : Math.min(archived, this.logFirst);
    return { floor, last: state.last_seq };
  }

  /** The block at stream sequence `seq`, or undefined when neither the log nor the archive holds it. */
  async block(seq: number): Promise<LogBlock | undefined> {
    if (seq < this.logFirst) {
      const archived = await this.deps.archive.block(seq);
      if (archived) return fromArchive(archived);
    }
    try {
      return fromStored(await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq }));
    } catch (error) {
      if (jetStreamErrorCode(error) !== JetStreamApiCodes.NoMessageFound) throw error;
    }
    this.logFirst = Math.max(this.logFirst, seq + 1);
    const archived = await this.deps.archive.block(seq);
    return archived ? fromArchive(archived) : undefined;
  }

  /** The records of the block at `seq`, with their bytes; empty when it is nowhere. */
  async records(seq: number): Promise<LoggedRecord[]> {
    const block = await this.block(seq);
    return block ? readLogMessage(block.headers, block.data) : [];
  }

  /** The blocks from `fromSeq` to `toSeq` (inclusive) that the archive holds, in order. */
  async *archived(fromSeq: number, toSeq: number): AsyncGenerator<LogBlock> {
    for await (const block of this.deps.archive.blocks(fromSeq, toSeq)) yield fromArchive(block);
  }

  /**
   * Every block from `fromSeq` to `toSeq` (inclusive) in order, one held at a time: the
   * archive's below the log's first sequence, then the log's through an ordered consumer. A block
   * that leaves the log while this reads is read from the archive, which holds it by then.
   */
  async *blocks(fromSeq: number, toSeq: number): AsyncGenerator<LogBlock> {
    let next = fromSeq;
    const { state } = await this.deps.jsm.streams.info(AUDIT_LOG_STREAM);
    const logFirst = logFirstSeq(state);
    if (next < logFirst) {
      for await (const block of this.archived(next, Math.min(toSeq, logFirst - 1))) {
        yield block;
        next = block.seq + 1;
      }
      next = Math.max(next, logFirst);
    }
    if (next > toSeq || next > state.last_seq) return;
    const consumer = await this.deps.js.consumers.get(AUDIT_LOG_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: next,
    });
    const messages = await consumer.consume(
      pullOptions({ max_messages: logReadBatch(state, 1000) }),
    );
    try {
      for await (const msg of messages) {
        if (msg.seq > next) {
          yield* this.archived(next, Math.min(msg.seq - 1, toSeq));
        }
        if (msg.seq > toSeq) break;
        yield fromConsumer(msg);
        next = msg.seq + 1;
        if (msg.seq >= toSeq || msg.info.pending === 0) break;
      }
    } finally {
      await messages.close();
    }
  }
}

function fromArchive(block: ArchivedBlock): LogBlock {
  return {
    seq: block.seq,
    headers: blockHeaders(block),
    data: block.data,
    timeNanos: Number(block.timeNanos),
  };
}

function fromStored(msg: StoredMsg): LogBlock {
  return { seq: msg.seq, headers: msg.header, data: msg.data, timeNanos: msg.time.getTime() * 1e6 };
}

/** A log message read by a consumer, as a block of the log. */
export function fromConsumer(msg: JsMsg): LogBlock {
  return { seq: msg.seq, headers: msg.headers, data: msg.data, timeNanos: msg.info.timestampNanos };
}
