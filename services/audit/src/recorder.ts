import type { JsonObject } from "@bufbuild/protobuf";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { decodeEvent, TYPE_HEADER } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
  headers as natsHeaders,
} from "nats";
import { AUDIT_LOG_STREAM, type AuditLog, auditLogSubject } from "./audit-log.js";
import { recordHash } from "./chain.js";

/** The durable consumer on TOOLMESH_AUDIT; a restarted service resumes where it stopped. */
export const AUDIT_CONSUMER = "audit";

const SOURCE_STREAM = "TOOLMESH_AUDIT";

interface Head {
  sequence: bigint;
  hash: string;
}

/**
 * Takes records from the audit stream, redacts their arguments, chains them and appends them to
 * the log stream. The append expects the last stream sequence it knows, so two instances can
 * never fork the chain; the source id is the message id, so a redelivery is stored once.
 */
export class AuditRecorder {
  private head: Head = { sequence: 0n, hash: "" };
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      auditLog: AuditLog;
      redact: (value: unknown) => unknown;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { jsm, js } = this.deps;
    await jsm.consumers.add(SOURCE_STREAM, {
      durable_name: AUDIT_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Short, so records held by a killed instance come back within seconds; storing one takes ms.
      ack_wait: nanos(5_000),
      max_ack_pending: 512,
    });
    await this.refreshHead();
    const consumer = await js.consumers.get(SOURCE_STREAM, AUDIT_CONSUMER);
    this.messages = await consumer.consume({ max_messages: 256 });
    const messages = this.messages;
    this.loop = (async () => {
      for await (const msg of messages) await this.handle(msg);
    })();
  }

  private async handle(msg: JsMsg): Promise<void> {
    const { log, auditLog, redact } = this.deps;
    let record: AuditRecord;
    try {
      record = decodeEvent(AuditRecordSchema, msg);
    } catch (error) {
      log.error(
        { err: error, subject: msg.subject, seq: msg.seq },
        "undecodable audit record; dropped",
      );
      msg.term();
      return;
    }
    const id = record.id || `audit-seq-${msg.seq}`;
    if (auditLog.has(id)) {
      msg.ack();
      return;
    }
    record.id = id;
    if (record.arguments) record.arguments = redact(record.arguments) as JsonObject;
    if (!record.time) record.time = timestampFromMs(Math.floor(msg.info.timestampNanos / 1e6));
    try {
      await this.append(record);
      msg.ack();
    } catch (error) {
      // Not acked: JetStream delivers it again after a delay; the id keeps it from being stored twice.
      log.warn(
        { err: error, call_id: record.callId, trace_id: record.traceId },
        "cannot store audit record; will retry",
      );
      msg.nak(1000);
    }
  }

  /** Appends one record after the current head; refreshes the head when another writer moved it. */
  private async append(record: AuditRecord): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const stored = create(AuditRecordSchema, {
        ...record,
        sequence: this.head.sequence + 1n,
        prevHash: this.head.hash,
        hash: "",
      });
      stored.hash = recordHash(stored);
      const h = natsHeaders();
      h.set(TYPE_HEADER, AuditRecordSchema.typeName);
      try {
        const ack = await this.deps.js.publish(
          auditLogSubject(record.agentId, record.tool),
          toBinary(AuditRecordSchema, stored),
          { headers: h, msgID: record.id, expect: { lastSequence: Number(this.head.sequence) } },
        );
        if (!ack.duplicate) {
          this.head = { sequence: BigInt(ack.seq), hash: stored.hash };
          this.deps.log.debug(
            { call_id: record.callId, trace_id: record.traceId, sequence: ack.seq },
            "audit record stored",
          );
        }
        return;
      } catch (error) {
        if (!String((error as Error)?.message).includes("wrong last sequence")) throw error;
        await this.refreshHead();
      }
    }
    throw new Error("the audit log head kept moving; giving up for now");
  }

  /** Reads the last stored record, which the next one must point at. */
  private async refreshHead(): Promise<void> {
    const info = await this.deps.jsm.streams.info(AUDIT_LOG_STREAM);
    const last = info.state.last_seq;
    if (last === 0) {
      this.head = { sequence: 0n, hash: "" };
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

  async stop(): Promise<void> {
    await this.messages?.close();
    await this.loop;
  }
}
