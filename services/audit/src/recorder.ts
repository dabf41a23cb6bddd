import { fromBinary, toBinary } from "@bufbuild/protobuf";
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
import { AUDIT_LOG_STREAM, auditLogSubject } from "./audit-log.js";
import { type ChainHead, chainedAfter } from "./hash-chain.js";
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

/** A record appended to the log stream: what it was, where, and its stored bytes. */
export interface StoredRecord {
  record: AuditRecord;
  seq: number;
  data: Uint8Array;
}

/**
 * Takes records from the audit stream, redacts their arguments, chains them and appends them to
 * the log stream, many per round trip: a batch is published back to back, each append expecting
 * the stream's last sequence and the previous record's id, so an append that lost a race to
 * another writer fails (and every one after it), and no instance can fork the chain. Failed
 * appends are chained again on the new head. The source id is the message id, and records the
 * index already holds are skipped, so a redelivery is stored once.
 */
export class AuditRecorder {
  private head: ChainHead = { sequence: 0n, hash: "" };
  private headStale = true;
  private messages: ConsumerMessages | undefined;
  private readonly queue: JsMsg[] = [];
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private publisher: PipelinedPublisher | undefined;

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
      if (ids.has(record.id) || isStored(record.id, record.callId)) {
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
   * Publishes the records back to back after the current head and returns how many, from the
   * first, are now stored (by this call, or before as duplicates); the rest must be chained
   * again on a fresh head.
   */
  private async appendAll(records: AuditRecord[]): Promise<number> {
    const publisher = this.publisher;
    if (!publisher) throw new Error("the recorder is not started");
    let tip = this.head;
    const sent = records.map((record, i) => {
      const stored = chainedAfter(record, tip);
      const data = toBinary(AuditRecordSchema, stored);
      const previous = records[i - 1];
      const headers = natsHeaders();
      headers.set(TYPE_HEADER, AuditRecordSchema.typeName);
      headers.set("Nats-Msg-Id", record.id);
      headers.set("Nats-Expected-Last-Sequence", String(tip.sequence));
      // After a lost race the stream's last record is another writer's, even at the sequence
      // this append expects: the id check makes the append fail instead of forking the chain.
      if (previous) headers.set("Nats-Expected-Last-Msg-Id", previous.id);
      const ack = publisher.publish(auditLogSubject(record.agentId, record.tool), data, headers);
      tip = { sequence: stored.sequence, hash: stored.hash };
      return { stored, data, ack };
    });
    const settled = await Promise.allSettled(sent.map((s) => s.ack));
    let done = 0;
    let failure: unknown;
    for (const [i, result] of settled.entries()) {
      const { stored, data } = sent[i] as (typeof sent)[number];
      if (result.status === "rejected") {
        failure = result.reason;
        break;
      }
      const ack: StoredAck = result.value;
      if (ack.duplicate) {
        // Stored before, by this or another instance; if exactly at the head, it is the head.
        if (BigInt(ack.seq) === this.head.sequence + 1n) await this.adoptHead(ack.seq, stored.hash);
      } else {
        this.head = { sequence: BigInt(ack.seq), hash: stored.hash };
        this.deps.onStored?.({ record: stored, seq: ack.seq, data });
        if (this.deps.log.isLevelEnabled("debug")) {
          this.deps.log.debug(
            { call_id: stored.callId, trace_id: stored.traceId, sequence: ack.seq },
            "audit record stored",
          );
        }
      }
      done++;
    }
    if (failure !== undefined && !isLostRace(failure)) throw failure;
    return done;
  }

  /** Takes a record another writer stored at the head's next sequence as the new head. */
  private async adoptHead(seq: number, ourHash: string): Promise<void> {
    const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq });
    const hash = fromBinary(AuditRecordSchema, stored.data).hash;
    if (hash !== ourHash) {
      // Only instances redacting differently can chain one source record two ways.
      this.deps.log.error(
        { sequence: seq },
        "another Audit instance stored this record with different content; check that every instance has the same TOOLMESH_AUDIT_REDACT_KEYS",
      );
    }
    this.head = { sequence: BigInt(seq), hash };
  }

  /** Reads the last stored record, which the next one must point at. */
  private async refreshHead(): Promise<void> {
    const info = await this.deps.jsm.streams.info(AUDIT_LOG_STREAM);
    const last = info.state.last_seq;
    this.headStale = false;
    if (last === 0 || info.state.messages === 0) {
      this.head = { sequence: BigInt(last), hash: "" };
      return;
    }
    try {
      const stored = await this.deps.jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: last });
      const record = fromBinary(AuditRecordSchema, stored.data);
      this.head = { sequence: BigInt(last), hash: record.hash };
    } catch (error) {
      this.deps.log.warn(
        { err: error, seq: last },
        "last audit record unreadable; chaining from an empty hash",
      );
      this.head = { sequence: BigInt(last), hash: "" };
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
