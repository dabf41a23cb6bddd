import { randomUUID } from "node:crypto";
import path from "node:path";
import { create, fromBinary, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { loadConfig } from "@toolmesh/config";
import { createSecretRedactor } from "@toolmesh/log";
import { newCallId, newTraceId } from "@toolmesh/names";
import { JetStreamPublisher, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  type AuditRecord,
  AuditRecordSchema,
  CallbackEventSchema,
  CallStatus,
  isFinal,
  PrincipalSchema,
  StoredUsageSchema,
  statusWord,
  type Usage,
  UsageSchema,
} from "@toolmesh/proto";
import { outcomeOf, recordKey } from "@toolmesh/records";
import { type NatsConnection, headers as natsHeaders } from "nats";
import { isEnd, isStart, mergedCall } from "../../services/audit/src/call-merge.js";
import { archiveSettings, auditConfig } from "../../services/audit/src/config.js";
import {
  addCall,
  countedCall,
  USAGE_BUCKET,
  usageKeyOf,
} from "../../services/callback/src/usage-store.js";
import {
  CallRecorder,
  type RecordSink,
} from "../../services/dispatcher/src/records/call-recorder.js";
import { memoryWriterConfig } from "../../services/memory-writer/src/config.js";
import { memoryActionOf } from "../../services/memory-writer/src/writer.js";
import { archiveLog } from "./log-archive.js";
import { LogAppender } from "./log-blocks.js";
import { MemoryFiles } from "./memory-files.js";

/** What a history holds: how many calls, by how many agents, of which tool. */
export interface HistoryShape {
  calls: number;
  agents: number;
  tool: string;
  /**
   * Records in each audit log block. Audit chains what its record stream holds when it takes the
   * next flight: at 100 calls/s each record comes alone (1, the default); under load the records
   * of concurrent calls share a block (at concurrency 64, about 64).
   */
  blockRecords?: number;
}

/** The agent of call `i` in a history of `agents` agents. */
export const historyAgent = (i: number, agents: number) =>
  agents === 1 ? "history-agent" : `history-agent-${i % agents}`;

/** Calls whose records are in flight at once: enough to keep nats-server busy, bounded memory. */
const BATCH = 500;
/** No ack within this long means nats-server is stuck, not slow. */
const ACK_TIMEOUT_MS = 120_000;

/**
 * Writes the history of `calls` finished calls as a stack that ran them would have left it: the
 * Dispatcher's own CallRecorder makes each call's start and end record; from those, what Audit
 * keeps (the records, arguments redacted, chained into audit log blocks — LogAppender — and the
 * log sealed into archive segments by Audit's own block mapping), what Callback derives (each
 * outcome broadcast on the callback feed, its usage in the hourly aggregates) and what
 * memory-writer writes (the call's two memory lines). The record stream stays empty: Audit took
 * every batch. Run it with the services stopped, then followersPastHistory(), so the log's
 * followers resume after the history instead of working it off; Audit's index reads the new
 * blocks at its next start (it continues from its checkpoint).
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
  const audit = loadConfig(auditConfig, { TOOLMESH_DATA_DIR: dataDir });
  const auditRedact = createSecretRedactor(audit.redactKeys);
  const publisher = new JetStreamPublisher(nc, { ackTimeoutMs: ACK_TIMEOUT_MS });
  const log = await LogAppender.open(jsm, publisher, shape.blockRecords ?? 1);
  const broadcasts: Promise<unknown>[] = [];
  const usage = new Map<string, Usage>();
  // The Dispatcher's recorder, its records caught as they are written.
  const written: Uint8Array[] = [];
  const sink: RecordSink = {
    write: (record) => {
      written.push(record);
      return Promise.resolve();
    },
    writable: true,
    full: undefined,
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
  };
  // A linger longer than any write here: each read-only call is one record, as the Dispatcher
  // writes a call that ends within TOOLMESH_START_LINGER_MS, written as its end is.
  const recorder = new CallRecorder(sink, [], randomUUID(), 60_000);
  try {
    for (let from = 0; from < shape.calls; from += BATCH) {
      for (let i = from; i < Math.min(shape.calls, from + BATCH); i++) {
        recordCall(recorder, i, shape);
        for (const record of asChained(written.splice(0))) {
          if (record.arguments) record.arguments = auditRedact(record.arguments) as JsonObject;
          const stored = log.append(record);
          const event = outcomeOf(stored);
          if (!event || !isFinal(event.status)) continue;
          // Callback: the broadcast, stored once under the record's key, and the hour's usage.
          const h = natsHeaders();
          h.set(TYPE_HEADER, CallbackEventSchema.typeName);
          h.set("Nats-Msg-Id", recordKey(stored));
          broadcasts.push(
            publisher.publish(
              subjects.callback(statusWord(event.status), event.tool),
              toBinary(CallbackEventSchema, event),
              h,
            ),
          );
          const counted = countedCall(event);
          const key = usageKeyOf(counted);
          let hour = usage.get(key);
          if (!hour) {
            hour = create(UsageSchema, {
              hour: timestampFromMs(counted.hourMs),
              agentId: counted.agentId,
              userId: counted.userId,
              tool: counted.tool,
            });
            usage.set(key, hour);
          }
          addCall(hour, counted);
          // memory-writer: the call's two lines in its agent's memory.
          const action = memoryActionOf(event, memoryRedact);
          memory.append(action.agentId, action.text);
        }
      }
      await log.drain();
      await Promise.all(broadcasts.splice(0));
      await memory.flushFull();
      progress?.(Math.min(shape.calls, from + BATCH));
    }
    await log.flush();
    await memory.flushAll();
    for (const [key, hour] of usage) {
      const value = toBinary(StoredUsageSchema, create(StoredUsageSchema, { usage: hour }));
      await publisher.publish(`$KV.${USAGE_BUCKET}.${key}`, value, natsHeaders());
    }
  } finally {
    publisher.close();
  }
  const archive = archiveSettings(audit);
  await archiveLog(nc, archive.dir, archive.segmentBytes);
}

/**
 * A call's records as Audit chains them: one record — the Dispatcher's one record of a read-only
 * call, or its start and end merged (mergedCall), as a call that ends within
 * TOOLMESH_AUDIT_MERGE_MS of its start is.
 */
function asChained(written: Uint8Array[]): AuditRecord[] {
  const [start, end, ...rest] = written.map((bytes) => ({
    record: fromBinary(AuditRecordSchema, bytes),
    body: bytes,
  }));
  if (!start || !end || rest.length > 0 || !isStart(start.record) || !isEnd(end.record))
    return written.map((bytes) => fromBinary(AuditRecordSchema, bytes));
  return [mergedCall(start, end).record];
}

/**
 * One finished read-only call through the Dispatcher's recorder: its start held for its end and
 * written with it as one record (CallRecord.start with `linger`).
 */
function recordCall(recorder: CallRecorder, i: number, shape: HistoryShape): void {
  const record = recorder.begin({
    // The ids the Dispatcher makes (time-ordered), as a real history holds.
    traceId: newTraceId(),
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
  void record.start(
    {
      args,
      timeoutMs: 30_000,
      runtime: "grpc",
      startedMs,
      deadlineMs: startedMs + 30_000,
    },
    { linger: true },
  );
  void record.finished(
    { status: CallStatus.SUCCESS, output: { n: i }, reason: "" },
    { args, attempts: 1, startedMs, finishedMs: startedMs + 1 },
  );
}

/** Where a data directory's audit archive is, with the Audit service's defaults. */
export function archiveDirOf(dataDir: string): string {
  return archiveSettings(loadConfig(auditConfig, { TOOLMESH_DATA_DIR: dataDir })).dir;
}

/** Where a data directory's audit index is. */
export function auditIndexOf(dataDir: string): string {
  return path.join(dataDir, "audit", "index.sqlite");
}
