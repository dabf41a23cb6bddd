import type { JsonObject } from "@bufbuild/protobuf";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import {
  consumeDurable,
  type DurableConsumer,
  JetStreamApiCodes,
  jetStreamErrorCode,
  TYPE_HEADER,
} from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import {
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  headers as natsHeaders,
} from "nats";
import { AUDIT_LOG_STREAM, type AuditLog, auditLogSubject } from "./audit-log.js";
import { recordHash } from "./hash-chain.js";

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
  private consumer: DurableConsumer | undefined;

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
    const { jsm, js, log } = this.deps;
    await this.refreshHead();
    this.consumer = await consumeDurable({
      js,
      jsm,
      stream: SOURCE_STREAM,
      durable: AUDIT_CONSUMER,
      schema: AuditRecordSchema,
      log,
      what: "audit record",
      maxAckPending: 512,
      handle: (record, msg) => this.store(record, msg),
      logFields: (record) => ({ call_id: record.callId, trace_id: record.traceId }),
    });
  }

  /** Redacts and appends one record; a record already stored (a redelivery) is skipped. */
  private async store(record: AuditRecord, msg: JsMsg): Promise<void> {
    const { auditLog, redact } = this.deps;
    const id = record.id || `audit-seq-${msg.seq}`;
    if (auditLog.has(id)) return;
    record.id = id;
    if (record.arguments) record.arguments = redact(record.arguments) as JsonObject;
    if (!record.time) record.time = timestampFromMs(Math.floor(msg.info.timestampNanos / 1e6));
    await this.append(record);
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
        if (jetStreamErrorCode(error) !== JetStreamApiCodes.WrongLastSequence) throw error;
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
    await this.consumer?.stop();
  }
}
