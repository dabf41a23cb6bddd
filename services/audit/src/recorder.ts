import { toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { JetStreamApiCodes, jetStreamErrorCode, TYPE_HEADER } from "@toolmesh/nats";
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
  headers as natsHeaders,
} from "nats";
import { AUDIT_BLOCK_SUBJECT, AUDIT_LOG_STREAM } from "./audit-log.js";
import { recordHash } from "./hash-chain.js";
import { BLOCK_TYPE, blockMsgId, encodeBlock, lastRecord, planBlocks } from "./log-block.js";
import { PipelinedPublisher, type StoredAck } from "./pipelined-publisher.js";
import { recordToChain } from "./record-mapping.js";

/** The durable consumer on TOOLMESH_AUDIT; a restarted service resumes where it stopped. */
export const AUDIT_CONSUMER = "audit";

const SOURCE_STREAM = "TOOLMESH_AUDIT";
/** Records chained per round trip at most: appended back to back, acked together. */
const MAX_BATCH = 256;
/** Unacked source messages the consumer hands out; also lets a second instance get its share. */
const MAX_ACK_PENDING = 512;
const MAX_ATTEMPTS = 20;
/**
 * Source ids of records this instance stored lately, so a source message redelivered before the
 * index has read its record back (an ack lost, or ack_wait passed while its block was appended)
 * is not stored twice: a block's message id covers the whole block, not each record.
 */
const MAX_RECENT = 16_384;
/** Room left in a message for its headers when a block is sized to NATS max_payload. */
const HEADER_ROOM = 4096;

/** Where the next block goes: after this stream message, whose last record is this one. */
interface Head {
  streamSeq: number;
  sequence: bigint;
  hash: string;
}

/** A block in flight: which records it holds and its message id. */
interface SentBlock {
  first: number;
  count: number;
  msgId: string;
  ack: Promise<StoredAck>;
}

/**
 * A record appended to the log stream: what it was, the stream sequence of its block, and its
 * own encoded bytes (as they stand in the block).
 */
export interface StoredRecord {
  record: AuditRecord;
  seq: number;
  data: Uint8Array;
}

/**
 * Takes records from the audit stream, redacts their arguments, chains them and appends them to
 * the log stream in blocks (AuditLogBlock), so a batch costs one stored write, not one per record.
 * A batch's blocks are published back to back, each expecting the stream's last sequence and the
 * previous block's id, so an append that lost a race to another writer fails (and every one after
 * it), and no instance can fork the chain. Failed appends are chained again on the new head. A
 * block's message id is derived from its records' source ids, and records the index (or this
 * instance, lately) already stored are skipped, so a redelivery is stored once.
 */
export class AuditRecorder {
  private head: Head = { streamSeq: 0, sequence: 0n, hash: "" };
  private headStale = true;
  private messages: ConsumerMessages | undefined;
  private readonly queue: JsMsg[] = [];
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private publisher: PipelinedPublisher | undefined;
  private readonly recent = new Set<string>();
  private maxBlockBytes = 0;

  constructor(
    private readonly deps: {
      nc: NatsConnection;
      js: JetStreamClient;
      jsm: JetStreamManager;
      /** True when the index holds a record with this source id (of this call). */
      isStored: (id: string, callId: string) => boolean;
      redact: (value: unknown) => unknown;
      log: Logger;
      /** Told of each record this instance appended. */
      onStored?: (stored: StoredRecord) => void;
    },
  ) {}

  async start(): Promise<void> {
    const { nc, js, jsm } = this.deps;
    this.publisher = new PipelinedPublisher(nc);
    this.maxBlockBytes = Math.max((nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM, 1024);
    await this.refreshHead();
    await jsm.consumers.add(SOURCE_STREAM, {
      durable_name: AUDIT_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Short, so messages held by a killed instance come back within seconds.
      ack_wait: nanos(5_000),
      max_ack_pending: MAX_ACK_PENDING,
    });
    const consumer = await js.consumers.get(SOURCE_STREAM, AUDIT_CONSUMER);
    const messages = await consumer.consume({ max_messages: MAX_ACK_PENDING / 2 });
    this.messages = messages;
    void (async () => {
      for await (const msg of messages) {
        this.queue.push(msg);
        this.wake?.();
      }
      this.stopped = true;
      this.wake?.();
    })();
    this.loop = this.chainLoop();
  }

  private async chainLoop(): Promise<void> {
    for (;;) {
      if (this.queue.length === 0) {
        if (this.stopped) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        // Let the messages already received join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.chainBatch(batch);
      } catch (error) {
        this.deps.log.warn({ err: error }, "cannot append audit records now; will retry");
        for (const msg of batch) msg.nak(1000);
        this.headStale = true;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  /** Chains and appends one batch; acks each message once its record is stored. */
  private async chainBatch(batch: JsMsg[]): Promise<void> {
    const { isStored, redact, log } = this.deps;
    let todo: { msg: JsMsg; record: AuditRecord }[] = [];
    const ids = new Set<string>();
    for (const msg of batch) {
      let record: AuditRecord;
      try {
        record = recordToChain(msg, redact);
      } catch (error) {
        log.error({ err: error, subject: msg.subject, seq: msg.seq }, "undecodable audit record");
        msg.term();
        continue;
      }
      if (ids.has(record.id) || this.recent.has(record.id) || isStored(record.id, record.callId)) {
        msg.ack();
        continue;
      }
      ids.add(record.id);
      todo.push({ msg, record });
    }
    for (let attempt = 1; todo.length > 0; attempt++) {
      if (this.headStale) await this.refreshHead();
      const done = await this.appendAll(todo.map((t) => t.record));
      for (const t of todo.slice(0, done)) t.msg.ack();
      todo = todo.slice(done);
      if (todo.length === 0) return;
      if (attempt === MAX_ATTEMPTS)
        throw new Error("the audit log head kept moving; giving up for now");
      this.headStale = true;
    }
  }

  /**
   * Chains the records after the current head, publishes them as blocks back to back and returns
   * how many, from the first, are now stored (by this call, or before as duplicates); the rest
   * must be chained again on a fresh head.
   */
  private async appendAll(records: AuditRecord[]): Promise<number> {
    const publisher = this.publisher;
    if (!publisher) throw new Error("the recorder is not started");
    let tip = { sequence: this.head.sequence, hash: this.head.hash };
    const encoded = records.map((record) => {
      // The records are this recorder's own copies: chaining them again after a lost race
      // overwrites these three fields.
      record.sequence = tip.sequence + 1n;
      record.prevHash = tip.hash;
      record.hash = "";
      record.hash = recordHash(record);
      tip = { sequence: record.sequence, hash: record.hash };
      return toBinary(AuditRecordSchema, record);
    });
    const blocks: SentBlock[] = [];
    let first = 0;
    for (const count of planBlocks(
      encoded.map((d) => d.length),
      this.maxBlockBytes,
    )) {
      const ids = records.slice(first, first + count).map((r) => r.id);
      const previous = blocks.at(-1);
      const msgId = blockMsgId(ids);
      const headers = natsHeaders();
      headers.set(TYPE_HEADER, BLOCK_TYPE);
      headers.set("Nats-Msg-Id", msgId);
      headers.set("Nats-Expected-Last-Sequence", String(this.head.streamSeq + blocks.length));
      // After a lost race the stream's last message is another writer's, even at the sequence
      // this append expects: the id check makes the append fail instead of forking the chain.
      if (previous) headers.set("Nats-Expected-Last-Msg-Id", previous.msgId);
      const data = encodeBlock(encoded.slice(first, first + count));
      blocks.push({
        first,
        count,
        msgId,
        ack: publisher.publish(AUDIT_BLOCK_SUBJECT, data, headers),
      });
      first += count;
    }
    const settled = await Promise.allSettled(blocks.map((b) => b.ack));
    let done = 0;
    let failure: unknown;
    for (const [i, result] of settled.entries()) {
      const block = blocks[i] as SentBlock;
      if (result.status === "rejected") {
        failure = result.reason;
        break;
      }
      const ack: StoredAck = result.value;
      const last = records[block.first + block.count - 1] as AuditRecord;
      if (ack.duplicate) {
        // Stored before, by this or another instance; if exactly at the head, it is the head.
        if (ack.seq === this.head.streamSeq + 1) await this.adoptHead(ack.seq, last.hash);
      } else {
        this.head = { streamSeq: ack.seq, sequence: last.sequence, hash: last.hash };
        for (let r = block.first; r < block.first + block.count; r++) {
          this.stored(records[r] as AuditRecord, ack.seq, encoded[r] as Uint8Array);
        }
      }
      done += block.count;
    }
    if (failure !== undefined && !isLostRace(failure)) throw failure;
    return done;
  }

  private stored(record: AuditRecord, seq: number, data: Uint8Array): void {
    this.recent.add(record.id);
    if (this.recent.size > MAX_RECENT) {
      for (const id of this.recent) {
        this.recent.delete(id);
        if (this.recent.size <= MAX_RECENT / 2) break;
      }
    }
    this.deps.onStored?.({ record, seq, data });
    if (this.deps.log.isLevelEnabled("debug")) {
      this.deps.log.debug(
        { call_id: record.callId, trace_id: record.traceId, sequence: record.sequence, seq },
        "audit record stored",
      );
    }
  }

  /** Takes a block another writer stored at the head's next stream sequence as the new head. */
  private async adoptHead(seq: number, ourHash: string): Promise<void> {
    const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq });
    const last = lastRecord(stored.header, stored.data);
    if (last?.hash !== ourHash) {
      // Only instances redacting differently can chain one source record two ways.
      this.deps.log.error(
        { seq },
        "another Audit instance stored these records with different content; check that every instance has the same TOOLMESH_AUDIT_REDACT_KEYS",
      );
    }
    this.head = { streamSeq: seq, sequence: last?.sequence ?? 0n, hash: last?.hash ?? "" };
  }

  /** Reads the last stored record, which the next one must point at. */
  private async refreshHead(): Promise<void> {
    const info = await this.deps.jsm.streams.info(AUDIT_LOG_STREAM);
    const last = info.state.last_seq;
    this.headStale = false;
    // A log that retention emptied keeps no record to continue from: a new chain starts after
    // the last stream sequence, which is no larger than the last record's sequence.
    this.head = { streamSeq: last, sequence: BigInt(last), hash: "" };
    if (last === 0 || info.state.messages === 0) return;
    try {
      const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: last });
      const record = lastRecord(stored.header, stored.data);
      if (record) this.head = { streamSeq: last, sequence: record.sequence, hash: record.hash };
    } catch (error) {
      this.deps.log.warn(
        { err: error, seq: last },
        "last audit log message unreadable; chaining from an empty hash",
      );
    }
  }

  /** Stops taking records and waits for the batch in hand. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.messages?.close();
    this.wake?.();
    await this.loop;
    this.publisher?.close();
  }
}

/** True for an append refused because the head moved (sequence or previous id). */
function isLostRace(error: unknown): boolean {
  const code = jetStreamErrorCode(error);
  return code === JetStreamApiCodes.WrongLastSequence || code === JetStreamApiCodes.WrongLastMsgId;
}
