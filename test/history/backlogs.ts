import { busAccess, JetStreamApiCodes, jetStreamErrorCode, streamNames } from "@toolmesh/nats";
import { loadSqlite } from "@toolmesh/service";
import { consumerDrained } from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { auditIndexOf } from "./call-history.js";

/** The durable consumers that follow a call's records, by stream: Audit's, then the log's. */
export const callConsumers = [
  { service: "audit", stream: streamNames.records, durable: busAccess.audit.durables.records },
  {
    service: "callback",
    stream: streamNames.auditLog,
    durable: busAccess.callback.durables.auditLog,
  },
  {
    service: "memory-writer",
    stream: streamNames.auditLog,
    durable: busAccess["memory-writer"].durables.auditLog,
  },
] as const;

/**
 * Sets the audit log's followers (Callback, memory-writer) past a history written straight into
 * the log, as if they had worked it off: their durable consumers are deleted, and each service
 * makes its own again at the log's end when it starts (libs/records followLog). Run it while they
 * are stopped, after writeCallHistory.
 */
export async function followersPastHistory(jsm: JetStreamManager): Promise<void> {
  for (const { stream, durable } of callConsumers) {
    if (stream !== streamNames.auditLog) continue;
    try {
      await jsm.consumers.delete(stream, durable);
    } catch (error) {
      if (jetStreamErrorCode(error) !== JetStreamApiCodes.ConsumerNotFound) throw error;
    }
  }
}

/**
 * Resolves once every call consumer has acked its whole stream — Audit has chained every record
 * batch, Callback (broadcasts and usage, acked once counted) and memory-writer have acked the
 * whole log — and, given the stack's data directory, Audit's index holds the log to its end.
 */
export async function backlogsDone(
  jsm: JetStreamManager,
  timeoutMs = 600_000,
  dataDir?: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const { stream, durable } of callConsumers)
    await consumerDrained(jsm, stream, durable, Math.max(1, deadline - Date.now()));
  if (dataDir) await indexRead(jsm, dataDir, deadline);
}

/** Resolves once Audit's index has read the audit log to its end. */
async function indexRead(jsm: JetStreamManager, dataDir: string, deadline: number) {
  const last = (await jsm.streams.info(streamNames.auditLog)).state.last_seq;
  const { DatabaseSync } = await loadSqlite();
  const indexed = () => {
    try {
      const db = new DatabaseSync(auditIndexOf(dataDir), { readOnly: true });
      try {
        const row = db.prepare("SELECT value FROM meta WHERE key = 'last_seq'").get() as
          | { value: string }
          | undefined;
        return Number(row?.value ?? 0);
      } finally {
        db.close();
      }
    } catch {
      // Not created yet, or being rebuilt.
      return 0;
    }
  };
  while (indexed() < last) {
    if (Date.now() > deadline)
      throw new Error(`Audit's index did not read the audit log up to ${last} in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
