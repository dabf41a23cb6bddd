import path from "node:path";
import { bucketNames, streamNames } from "@toolmesh/nats";
import { loadSqlite } from "@toolmesh/service";
import type { JetStreamClient, JetStreamManager } from "nats";
import { AUDIT_CONSUMER } from "../../services/audit/src/recorder.js";
import { CALLBACK_CONSUMER } from "../../services/callback/src/broadcaster.js";
import { CALLBACK_BUCKET } from "../../services/callback/src/call-store.js";
import { MEMORY_CONSUMER } from "../../services/memory-writer/src/writer.js";

/** The durable consumers of the call records, by stream. */
export const callConsumers = [
  { stream: "TOOLMESH_AUDIT", durable: AUDIT_CONSUMER },
  { stream: "TOOLMESH_OUTCOME", durable: CALLBACK_CONSUMER },
  { stream: "TOOLMESH_CALLBACK", durable: MEMORY_CONSUMER },
] as const;

/**
 * Acks everything in the call consumers' streams, as the consumers would have once they handled
 * it: after writeCallHistory, so that the services start on a history they are done with. The
 * durables must exist (the services ran once); run it while they are stopped.
 */
export async function ackBacklogs(js: JetStreamClient, jsm: JetStreamManager): Promise<void> {
  for (const { stream, durable } of callConsumers) {
    const last = (await jsm.streams.info(stream)).state.last_seq;
    if ((await ackFloor(jsm, stream, durable)) >= last) continue;
    const consumer = await js.consumers.get(stream, durable);
    const messages = await consumer.consume({ max_messages: 1000 });
    for await (const msg of messages) {
      msg.ack();
      if (msg.seq >= last) break;
    }
    await waitForAckFloor(jsm, stream, durable, last);
  }
}

/**
 * Resolves once every call consumer has acked its whole stream (after calls through the stack),
 * and Callback's usage counter has counted every call in its bucket: a stack that served its
 * history counted each call as it ended, so one grown straight into the streams must too before
 * it stands for that stack. Given the stack's data directory, also once Callback's outcome
 * history has read the whole broadcast stream.
 */
export async function backlogsDone(
  jsm: JetStreamManager,
  timeoutMs = 600_000,
  dataDir?: string,
): Promise<void> {
  for (const { stream, durable } of callConsumers) {
    const last = (await jsm.streams.info(stream)).state.last_seq;
    await waitForAckFloor(jsm, stream, durable, last, timeoutMs);
  }
  const last = (await jsm.streams.info(`KV_${CALLBACK_BUCKET}`)).state.last_seq;
  const deadline = Date.now() + timeoutMs;
  const usage = `KV_${bucketNames.usage}`;
  const counted = async () => {
    const entry = await jsm.streams
      .getMessage(usage, { last_by_subj: `$KV.${bucketNames.usage}.checkpoint` })
      .catch(() => undefined);
    return entry ? Number(new TextDecoder().decode(entry.data)) || 0 : 0;
  };
  while ((await counted()) < last) {
    if (Date.now() > deadline)
      throw new Error(`the usage counter did not count up to ${last} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (dataDir) await historyRead(jsm, dataDir, deadline);
}

/** Resolves once Callback's outcome history has indexed the broadcast stream to its end. */
async function historyRead(jsm: JetStreamManager, dataDir: string, deadline: number) {
  const last = (await jsm.streams.info(streamNames.callback)).state.last_seq;
  const { DatabaseSync } = await loadSqlite();
  const file = path.join(dataDir, "callback", "outcomes.sqlite");
  const indexed = () => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const row = db.prepare("SELECT value FROM meta WHERE key = 'last_seq'").get() as
        | { value: string }
        | undefined;
      return Number(row?.value ?? 0);
    } finally {
      db.close();
    }
  };
  while (indexed() < last) {
    if (Date.now() > deadline)
      throw new Error(`Callback's outcome history did not read up to ${last} in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function ackFloor(jsm: JetStreamManager, stream: string, durable: string): Promise<number> {
  return (await jsm.consumers.info(stream, durable)).ack_floor.stream_seq;
}

async function waitForAckFloor(
  jsm: JetStreamManager,
  stream: string,
  durable: string,
  seq: number,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await ackFloor(jsm, stream, durable)) < seq) {
    if (Date.now() > deadline)
      throw new Error(`${durable} did not ack ${stream} up to ${seq} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
