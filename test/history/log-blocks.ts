import { toBinary } from "@bufbuild/protobuf";
import { type ChainHead, chainedAfter } from "@toolmesh/archive";
import { type JetStreamPublisher, streamNames, subjects, TYPE_HEADER } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { BLOCK_TYPE, encodeRecords, lastRecord, recordKey } from "@toolmesh/records";
import { type JetStreamManager, headers as natsHeaders } from "nats";
import { blockMsgId } from "../../services/audit/src/log-block.js";

/** Blocks sent and not yet acked at most; more wait for drain(). */
const WINDOW = 256;

/**
 * Appends records straight to the audit log as Audit's chain writer does (BlockAppender): each
 * chained after the last (version-2 hash, libs/archive chainedAfter), `blockRecords` records a
 * block (AuditLogBlock) with the headers Audit sends — type, a message id derived from the
 * records' keys, the expected last sequence and message id — so the log holds what a stack that
 * served those calls would hold. For a stack whose services are stopped: no other writer may
 * append meanwhile.
 */
export class LogAppender {
  private block: Uint8Array[] = [];
  private keys: string[] = [];
  private acks: Promise<unknown>[] = [];
  private lastMsgId: string | undefined;

  private constructor(
    private readonly publisher: JetStreamPublisher,
    private readonly blockRecords: number,
    private tip: ChainHead,
    private streamSeq: number,
  ) {}

  /** Continues the log where it ends. */
  static async open(
    jsm: JetStreamManager,
    publisher: JetStreamPublisher,
    blockRecords: number,
  ): Promise<LogAppender> {
    const { state } = await jsm.streams.info(streamNames.auditLog);
    let head: ChainHead = { sequence: BigInt(state.last_seq), hash: "" };
    if (state.messages > 0) {
      const last = await jsm.streams.getMessage(streamNames.auditLog, { seq: state.last_seq });
      const record = lastRecord(last.header, last.data);
      if (record) head = { sequence: record.sequence, hash: record.hash };
    }
    return new LogAppender(publisher, Math.max(1, blockRecords), head, state.last_seq);
  }

  /** The last record chained. */
  get head(): ChainHead {
    return this.tip;
  }

  /** Chains a record (its arguments redacted already, as Audit stores them) into the next block. */
  append(record: AuditRecord): AuditRecord {
    const stored = chainedAfter(record, this.tip);
    this.tip = { sequence: stored.sequence, hash: stored.hash };
    this.block.push(toBinary(AuditRecordSchema, stored));
    this.keys.push(recordKey(stored));
    if (this.block.length >= this.blockRecords) this.send();
    return stored;
  }

  private send(): void {
    const msgId = blockMsgId(this.keys);
    const h = natsHeaders();
    h.set(TYPE_HEADER, BLOCK_TYPE);
    h.set("Nats-Msg-Id", msgId);
    h.set("Nats-Expected-Last-Sequence", String(this.streamSeq));
    if (this.lastMsgId) h.set("Nats-Expected-Last-Msg-Id", this.lastMsgId);
    this.acks.push(this.publisher.publish(subjects.auditLogBlock, encodeRecords(this.block), h));
    this.streamSeq++;
    this.lastMsgId = msgId;
    this.block = [];
    this.keys = [];
  }

  /** True when enough blocks wait for their acks that the caller should drain(). */
  get full(): boolean {
    return this.acks.length >= WINDOW;
  }

  /** Waits for the acks of the blocks sent. */
  async drain(): Promise<void> {
    await Promise.all(this.acks.splice(0));
  }

  /** Sends the last, partial block and waits for every ack. */
  async flush(): Promise<void> {
    if (this.block.length > 0) this.send();
    await this.drain();
  }
}
