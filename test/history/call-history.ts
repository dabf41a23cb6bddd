import { randomBytes } from "node:crypto";
import { create, type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type ChainHead, chainedAfter } from "@toolmesh/archive";
import { loadConfig } from "@toolmesh/config";
import { createSecretRedactor } from "@toolmesh/log";
import { newCallId } from "@toolmesh/names";
import { JetStreamPublisher, type StoredAck, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  CallbackEventSchema,
  CallStatus,
  type Outcome,
  OutcomeSchema,
  PrincipalSchema,
  StoredUsageSchema,
  statusWord,
  TraceEventSchema,
  type Usage,
  UsageSchema,
} from "@toolmesh/proto";
import { lastRecord } from "@toolmesh/records";
import { type JetStreamManager, type NatsConnection, headers as natsHeaders } from "nats";
import { AUDIT_LOG_STREAM } from "../../services/audit/src/audit-log.js";
import { callbackTraceEvent } from "../../services/callback/src/broadcaster.js";
import { CALLBACK_BUCKET, callKey, encodeCall } from "../../services/callback/src/call-store.js";
import { callbackConfig } from "../../services/callback/src/config.js";
import { normalise } from "../../services/callback/src/normalise.js";
import {
  addCall,
  callHour,
  USAGE_BUCKET,
  usageKey,
} from "../../services/callback/src/usage-store.js";
import type { LeaseLedger } from "../../services/dispatcher/src/records/call-leases.js";
import { CallRecorder } from "../../services/dispatcher/src/records/call-recorder.js";
import type { EventPublisher } from "../../services/dispatcher/src/records/event-publisher.js";
import { memoryWriterConfig } from "../../services/memory-writer/src/config.js";
import { memoryActionOf } from "../../services/memory-writer/src/writer.js";
import { MemoryFiles } from "./memory-files.js";

/** What a history holds: how many calls, by how many agents, of which tool. */
export interface HistoryShape {
  calls: number;
  agents: number;
  tool: string;
}

/**
 * The calls whose keys a long-running stack still holds in the callback bucket: those of the last
 * live window (TOOLMESH_CALLBACK_LIVE_SECONDS, 1 h) at 100 calls/s. The keys of older calls have
 * expired, as they would have in a stack that took that long to serve its history.
 */
export const LIVE_CALLS = 100 * 3600;

/** The agent of call `i` in a history of `agents` agents. */
export const historyAgent = (i: number, agents: number) =>
  agents === 1 ? "history-agent" : `history-agent-${i % agents}`;

/** Calls whose records are in flight at once: enough to keep nats-server busy, bounded memory. */
const BATCH = 500;
/** No ack within this long means nats-server is stuck, not slow. */
const ACK_TIMEOUT_MS = 120_000;

/**
 * Writes the records of `calls` finished calls straight into the streams, the callback bucket and
 * the memory directory, as a stack that ran them would have left them: the Dispatcher's own
 * CallRecorder makes each call's TOOL_EXECUTE, TOOL_RESULT, audit record and outcome; from those,
 * the consumers' own mappings make what Audit (the chained log record), Callback (the
 * CALLBACK_* trace event, the broadcast, and for the last LIVE_CALLS calls the calls.<id> key,
 * marked broadcast; the usage of the older ones, whose keys would have expired, straight into
 * their hourly aggregates) and memory-writer (the two memory lines) write. Run it with the services stopped and then ackBacklogs(), so the
 * consumers resume after the history instead of working it off. The Audit index catches up at
 * the next start of Audit (it reads what follows its checkpoint).
 */
export async function writeCallHistory(
  nc: NatsConnection,
  dataDir: string,
  shape: HistoryShape,
  progress?: (written: number) => void,
): Promise<void> {
  const jsm = await nc.jetstreamManager();
  const memoryConfig = loadConfig(memoryWriterConfig, {});
  const memory = new MemoryFiles(dataDir, memoryConfig.maxFileBytes);
  const memoryRedact = createSecretRedactor(memoryConfig.redactKeys);
  const auditRedact = createSecretRedactor([]);
  const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: ACK_TIMEOUT_MS });
  const derived: Promise<unknown>[] = [];
  let head = await auditLogHead(jsm);
  const liveTtl = `${loadConfig(callbackConfig, {}).callLiveSeconds}s`;
  const expired = Math.max(0, shape.calls - LIVE_CALLS);
  let outcomes = 0;
  const usage = new Map<string, Usage>();
  const proto = <Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    data: Uint8Array,
    msgId?: string,
  ) => {
    const h = natsHeaders();
    h.set(TYPE_HEADER, schema.typeName);
    if (msgId) h.set("Nats-Msg-Id", msgId);
    derived.push(publisher.publish(subject, data, h));
  };
  const consumers = {
    audit(record: AuditRecord) {
      const input = create(AuditRecordSchema, {
        ...record,
        arguments: auditRedact(record.arguments) as AuditRecord["arguments"],
      });
      const stored = chainedAfter(input, head);
      head = { sequence: stored.sequence, hash: stored.hash };
      proto(
        subjects.auditLogRecord(stored.agentId, stored.tool),
        AuditRecordSchema,
        toBinary(AuditRecordSchema, stored),
        stored.id,
      );
    },
    outcome(outcome: Outcome) {
      const event = normalise(outcome);
      const encoded = toBinary(CallbackEventSchema, event);
      const trace = callbackTraceEvent(event);
      proto(
        subjects.trace("callback", event.traceId),
        TraceEventSchema,
        toBinary(TraceEventSchema, trace),
        trace.id,
      );
      proto(
        subjects.callback(statusWord(event.status), event.tool),
        CallbackEventSchema,
        encoded,
        event.callId,
      );
      if (outcomes++ < expired) {
        // Counted as the usage counter did while its key lived; the key has expired since.
        const key = usageKey(callHour(event), event.agentId, event.userId, event.tool);
        let hour = usage.get(key);
        if (!hour) {
          hour = create(UsageSchema, {
            hour: timestampFromMs(callHour(event)),
            agentId: event.agentId,
            userId: event.userId,
            tool: event.tool,
          });
          usage.set(key, hour);
        }
        addCall(hour, event);
      } else {
        // The call's key as the broadcaster leaves it: the final event, marked broadcast, with
        // the live window as its TTL.
        const h = natsHeaders();
        h.set("Nats-TTL", liveTtl);
        derived.push(
          publisher.publish(
            `$KV.${CALLBACK_BUCKET}.${callKey(event.callId)}`,
            encodeCall(encoded, true),
            h,
          ),
        );
      }
      const action = memoryActionOf(event, memoryRedact);
      memory.append(action.agentId, action.text);
    },
  };
  const recorder = new CallRecorder(new ObservedPublisher(publisher, consumers), [], noLeases);
  try {
    for (let from = 0; from < shape.calls; from += BATCH) {
      const flushed: Promise<void>[] = [];
      for (let i = from; i < Math.min(shape.calls, from + BATCH); i++) {
        flushed.push(recordCall(recorder, i, shape));
      }
      await Promise.all(flushed);
      await Promise.all(derived.splice(0));
      await memory.flushFull();
      progress?.(Math.min(shape.calls, from + BATCH));
    }
    await memory.flushAll();
    for (const [key, hour] of usage) {
      const value = toBinary(StoredUsageSchema, create(StoredUsageSchema, { usage: hour }));
      await publisher.publish(`$KV.${USAGE_BUCKET}.${key}`, value, natsHeaders());
    }
  } finally {
    publisher.close();
  }
}

/** One finished call through the Dispatcher's recorder: what its chain would have published. */
function recordCall(recorder: CallRecorder, i: number, shape: HistoryShape): Promise<void> {
  const record = recorder.begin({
    traceId: randomBytes(16).toString("hex"),
    // The ids the Dispatcher makes (a UUIDv7 each), as a real history holds.
    callId: newCallId(),
    parentId: "",
    tool: shape.tool,
    principal: create(PrincipalSchema, {
      agentId: historyAgent(i, shape.agents),
      roles: ["agent"],
    }),
  });
  const startedMs = Date.now();
  const args = { n: i };
  void record.start({
    args,
    timeoutMs: 30_000,
    runtime: "grpc",
    startedMs,
    deadlineMs: startedMs + 30_000,
  });
  record.finished(
    { status: CallStatus.SUCCESS, output: { n: i }, reason: "" },
    { args, attempts: 1, startedMs, finishedMs: startedMs + 1 },
  );
  return record.flush();
}

/** Leases are opened and deleted within a call; a finished history holds none. */
const noLeases: LeaseLedger = {
  instance: "history",
  open: () => Promise.resolve(0),
  release: () => {},
};

/** The Dispatcher's publisher, with the consumers told of each audit record and outcome. */
class ObservedPublisher implements EventPublisher {
  constructor(
    private readonly inner: EventPublisher,
    private readonly consumers: {
      audit(record: AuditRecord): void;
      outcome(outcome: Outcome): void;
    },
  ) {}

  get writable() {
    return this.inner.writable;
  }

  get maxPayload() {
    return this.inner.maxPayload;
  }

  get full() {
    return this.inner.full;
  }

  publishMessage<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options?: { msgId?: string },
  ): Promise<StoredAck> {
    const stored = this.inner.publishMessage(subject, schema, value, options);
    if (schema.typeName === AuditRecordSchema.typeName) this.consumers.audit(value as AuditRecord);
    if (schema.typeName === OutcomeSchema.typeName) this.consumers.outcome(value as Outcome);
    return stored;
  }
}

/** The last record of the audit log, which the next one must point at. */
async function auditLogHead(jsm: JetStreamManager): Promise<ChainHead> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  if (state.messages === 0) return { sequence: BigInt(state.last_seq), hash: "" };
  // A log message may be a block of records (whose sequences are not the stream's).
  const message = await jsm.streams.getMessage(AUDIT_LOG_STREAM, { seq: state.last_seq });
  const last = lastRecord(message.header, message.data);
  return { sequence: last?.sequence ?? BigInt(state.last_seq), hash: last?.hash ?? "" };
}
