import { natsHeaderBytes, recordHashV2, storedSize } from "@toolmesh/archive";
import type { Logger } from "@toolmesh/log";
import {
  JetStreamApiCodes,
  type JetStreamPublisher,
  jetStreamErrorCode,
  type StoredAck,
  subjects,
  TYPE_HEADER,
} from "@toolmesh/nats";
import type { AuditRecord } from "@toolmesh/proto";
import { BLOCK_TYPE, lastRecord, readLogMessage, recordKey } from "@toolmesh/records";
import { type JetStreamManager, headers as natsHeaders } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import { blockMsgId, encodeBlock, planBlocks } from "./log-block.js";
import type { LogRoom } from "./log-room.js";
import { chainedRecordBytes } from "./record-encoding.js";
import type { ReceivedRecord } from "./record-mapping.js";

/**
 * A record appended to the log stream: what it was, the stream sequence of its block, and its
 * own encoded bytes (as they stand in the block).
 */
export interface StoredRecord {
  record: AuditRecord;
  seq: number;
  /** Its place among the block's records, from 0. */
  pos: number;
  data: Uint8Array;
}

/** The end of the chain: the stream message it ends with and that message's last record. */
interface ChainEnd {
  streamSeq: number;
  sequence: bigint;
  hash: string;
  /** The message id of that message when this appender sent it, for the next append to expect. */
  msgId?: string;
}

/** A block published and not yet acknowledged: which records it holds and its message id. */
interface SentBlock {
  first: number;
  count: number;
  msgId: string;
  ack: Promise<StoredAck>;
  /** What it takes in the log (nats-server's accounting). */
  bytes: number;
}

/** Where appends ask for room in the log first (log-room.ts), so none pushes out a block too soon. */
export type AppendRoom = Pick<
  LogRoom,
  "whenRoom" | "mayAppend" | "sent" | "landed" | "maxBlockBytes" | "maxBatchBytes"
>;

/** A bound on what a record chained from `body` takes in a block: body, chain fields, tag. */
const CHAINED_RECORD_OVERHEAD = 160;
/** A bound on what a block takes in the log besides its records: subject, headers, framing. */
const BLOCK_OVERHEAD = 512;

/** Records chained and published as blocks, whose acks are still to come. */
export interface Flight {
  records: readonly ReceivedRecord[];
  encoded: Uint8Array[];
  blocks: SentBlock[];
}

/** Which records of a flight are stored (by this appender, or before), and any failure. */
export interface Landing {
  stored: boolean[];
  /** An append failed for another reason than a lost race (timeout, refusal); undefined if none. */
  error?: unknown;
}

/** Log messages read back past the head, at most, when it is read again (see refreshHead). */
const READ_BACK_MAX = 64;

/** A block not published because one before it in its flight failed. */
class BlockNotSent extends Error {
  constructor() {
    super("not sent: an earlier block of its flight was not stored");
  }
}

/**
 * Chains records and appends them to the log stream as blocks. Each block expects the stream's
 * last sequence, so an append that lost a race to another writer fails and no writer can fork
 * the chain. `head` is the last block known stored; `tip` the last one sent.
 *
 * On a stream of one replica many blocks are in flight at once, and a block after one of this
 * appender's own also expects that block's message id: otherwise, after a lost race, it could
 * land on the other writer's message at the very sequence it expects. On a replicated stream a
 * block is sent only once the one before it is stored, and expects the sequence alone: the
 * server checks an expected message id on every replica against a value a replica that caught
 * up from its peers does not hold (nats-server 2.15 does not set it on catch-up), and that
 * replica then stops applying the stream until it is reset.
 */
export class BlockAppender {
  private head: ChainEnd = { streamSeq: 0, sequence: 0n, hash: "" };
  private tip: ChainEnd = this.head;
  /** True when the head must be read from the stream before the next append. */
  stale = true;
  /** True while the log stream has one replica: blocks are then sent without waiting. */
  pipelined = true;

  constructor(
    private readonly deps: {
      jsm: JetStreamManager;
      publisher: Pick<JetStreamPublisher, "publish">;
      log: Logger;
      maxBlockBytes: number;
      /** Told of each record stored by this appender, in chain order. */
      onStored: (stored: StoredRecord) => void;
      /** Told of the source ids in log messages found past the head when it is read again. */
      onFound?: (recordIds: string[]) => void;
      room?: AppendRoom;
    },
  ) {}

  /**
   * Waits until appending these records drops no block of the log that must stay (not archived,
   * or not read by a durable consumer of the log). Call before send(); `keepAlive` runs every
   * two seconds while it waits.
   */
  async waitForRoom(records: readonly ReceivedRecord[], keepAlive?: () => void): Promise<void> {
    await this.deps.room?.whenRoom(this.flightBytes(records), keepAlive);
  }

  /** What a flight of these records takes in the log at most: bodies, chain fields, framing. */
  flightBytes(records: readonly ReceivedRecord[]): number {
    const bytes = records.reduce((n, r) => n + r.body.length + CHAINED_RECORD_OVERHEAD, 0);
    const blocks = Math.ceil(bytes / this.maxBlockBytes()) + 1;
    return bytes + blocks * BLOCK_OVERHEAD;
  }

  /** The most a flight should take: a small log must keep room beside it. */
  get maxFlightBytes(): number {
    return this.deps.room?.maxBatchBytes ?? Infinity;
  }

  /** True when a flight of these records may be sent now without waiting for room. */
  hasRoomFor(records: readonly ReceivedRecord[]): boolean {
    return this.deps.room?.mayAppend(this.flightBytes(records)) ?? true;
  }

  private maxBlockBytes(): number {
    return Math.min(this.deps.maxBlockBytes, this.deps.room?.maxBlockBytes ?? Infinity);
  }

  /**
   * Chains the records after the tip and publishes them as blocks, back to back; the records are
   * the caller's own copies: chaining them again after a lost race overwrites their chain fields.
   */
  send(records: readonly ReceivedRecord[]): Flight {
    let tip = this.tip;
    const encoded = records.map(({ record, body }) => {
      record.sequence = tip.sequence + 1n;
      record.prevHash = tip.hash;
      record.hash = recordHashV2(record.sequence, record.prevHash, body);
      tip = { ...tip, sequence: record.sequence, hash: record.hash };
      return chainedRecordBytes(body, record);
    });
    const blocks: SentBlock[] = [];
    let first = 0;
    let streamSeq = this.tip.streamSeq;
    let previousId = this.tip.msgId;
    let previous: Promise<unknown> = Promise.resolve();
    const sizes = encoded.map((data) => data.length);
    for (const count of planBlocks(sizes, this.maxBlockBytes())) {
      const msgId = blockMsgId(records.slice(first, first + count).map((r) => recordKey(r.record)));
      const headers = natsHeaders();
      headers.set(TYPE_HEADER, BLOCK_TYPE);
      headers.set("Nats-Msg-Id", msgId);
      headers.set("Nats-Expected-Last-Sequence", String(streamSeq));
      // After a lost race the stream's last message is another writer's, even at the sequence
      // this append expects: the id check makes the append fail instead of forking the chain.
      if (previousId && this.pipelined) headers.set("Nats-Expected-Last-Msg-Id", previousId);
      const data = encodeBlock(encoded.slice(first, first + count));
      const bytes = storedSize({
        subject: subjects.auditLogBlock,
        headerBytes: natsHeaderBytes(headers),
        data,
      });
      this.deps.room?.sent(bytes);
      const publish = () => this.deps.publisher.publish(subjects.auditLogBlock, data, headers);
      const ack = this.pipelined
        ? publish()
        : previous.then(publish, () => Promise.reject(new BlockNotSent()));
      previous = ack;
      // Settled by land(); this keeps an unlanded failure from being reported as unhandled.
      ack.catch(() => {});
      blocks.push({ first, count, msgId, ack, bytes });
      first += count;
      streamSeq++;
      previousId = msgId;
    }
    this.tip = { streamSeq, sequence: tip.sequence, hash: tip.hash, msgId: previousId };
    return { records, encoded, blocks };
  }

  /**
   * Waits for a flight's acks, in order, and moves the head past each stored block. After a
   * failure, every flight sent later was chained on it: the caller lands them too, then marks the
   * appender stale and chains what is left again.
   */
  async land(flight: Flight): Promise<Landing> {
    const settled = await Promise.allSettled(flight.blocks.map((b) => b.ack));
    for (const block of flight.blocks) this.deps.room?.landed(block.bytes);
    const stored = flight.records.map(() => false);
    let error: unknown;
    let lost = false;
    for (const [i, result] of settled.entries()) {
      const block = flight.blocks[i] as SentBlock;
      const range = { from: block.first, to: block.first + block.count };
      if (result.status === "rejected") {
        lost = true;
        if (!isLostRace(result.reason)) error ??= result.reason;
        continue;
      }
      const ack = result.value;
      const last = flight.records[range.to - 1]?.record as AuditRecord;
      if (ack.duplicate) {
        // Stored before, by this or another writer; if exactly at the head, it is the head.
        if (ack.seq === this.head.streamSeq + 1) await this.adoptHead(ack.seq, last.hash);
      } else {
        this.head = { streamSeq: ack.seq, sequence: last.sequence, hash: last.hash };
        for (let r = range.from; r < range.to; r++) {
          const record = flight.records[r]?.record as AuditRecord;
          this.deps.onStored({
            record,
            seq: ack.seq,
            pos: r - range.from,
            data: flight.encoded[r] as Uint8Array,
          });
        }
      }
      stored.fill(true, range.from, range.to);
    }
    if (lost) this.stale = true;
    return { stored, error };
  }

  /** Reads the last stored record, which the next one must point at. */
  async refreshHead(): Promise<void> {
    const known = this.head.streamSeq;
    const info = await this.deps.jsm.streams.info(AUDIT_LOG_STREAM);
    const last = info.state.last_seq;
    // A block whose append got no answer (a timeout, a lost connection) may be stored all the
    // same, and its records come back to be chained again before the index has read it: the
    // messages past the last head this appender knew say which are stored. An appender that
    // knows no head yet (a writer taking over from one that died) reads the last messages: the
    // records its predecessor stored but had not acked come back to it, and its own index may
    // not have read them yet.
    if (last > known) await this.readBack(Math.max(known + 1, last - READ_BACK_MAX + 1), last);
    this.pipelined = (info.config.num_replicas ?? 1) <= 1;
    // A log that retention emptied keeps no record to continue from: a new chain starts after
    // the last stream sequence, which is no larger than the last record's sequence.
    let head: ChainEnd = { streamSeq: last, sequence: BigInt(last), hash: "" };
    if (last > 0 && info.state.messages > 0) {
      // Not read (NATS away, a stream between leaders): the head stays unknown and nothing is
      // appended until it is read. Chaining on a made-up head forked the chain after a partition:
      // its blocks took chain sequences the log already held.
      const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: last });
      try {
        const record = lastRecord(stored.header, stored.data);
        if (record) head = { streamSeq: last, sequence: record.sequence, hash: record.hash };
      } catch (error) {
        this.deps.log.error(
          { err: error, seq: last },
          "last audit log message undecodable; chaining from an empty hash",
        );
      }
    }
    this.head = head;
    this.tip = head;
    this.stale = false;
  }

  private async readBack(from: number, to: number): Promise<void> {
    for (let seq = from; seq <= to; seq++) {
      try {
        const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq });
        this.deps.onFound?.(
          readLogMessage(stored.header, stored.data).map((r) => recordKey(r.record)),
        );
      } catch (error) {
        // Gone (retention): the index answers for its records. Not read (NATS away, between
        // leaders): the head is not refreshed, so records an unanswered append stored are not
        // chained a second time.
        if (jetStreamErrorCode(error) !== JetStreamApiCodes.NoMessageFound) throw error;
        this.deps.log.debug({ err: error, seq }, "audit log message not read back");
      }
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
}

/** True for an append refused because the head moved (sequence or previous id). */
function isLostRace(error: unknown): boolean {
  if (error instanceof BlockNotSent) return true;
  const code = jetStreamErrorCode(error);
  return code === JetStreamApiCodes.WrongLastSequence || code === JetStreamApiCodes.WrongLastMsgId;
}
