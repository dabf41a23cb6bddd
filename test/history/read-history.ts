import type { JetStreamClient, JetStreamManager } from "nats";
import { AUDIT_LOG_STREAM } from "../../services/audit/src/audit-log.js";
import { CALLBACK_BUCKET } from "../../services/callback/src/call-store.js";

/** Every stream that holds a record (or key) per call. */
export const perCallStreams = [
  "TOOLMESH_TRACE",
  "TOOLMESH_AUDIT",
  AUDIT_LOG_STREAM,
  "TOOLMESH_OUTCOME",
  "TOOLMESH_CALLBACK",
  `KV_${CALLBACK_BUCKET}`,
];

/** What reading streams once took this process. */
export interface HistoryRead {
  messages: number;
  /** Wall time. */
  ms: number;
  /** This process's CPU time (user and system). */
  cpuMs: number;
}

/**
 * Reads every message of the streams (all per-call streams by default) once, without decoding:
 * the least a start-up that read its history would do. Its cost is the yardstick a restart is
 * held against.
 */
export async function readHistoryOnce(
  js: JetStreamClient,
  jsm: JetStreamManager,
  streams: readonly string[] = perCallStreams,
): Promise<HistoryRead> {
  const began = performance.now();
  const cpu = process.cpuUsage();
  let messages = 0;
  for (const stream of streams) {
    const { state } = await jsm.streams.info(stream);
    if (state.messages === 0) continue;
    const consumer = await js.consumers.get(stream);
    const iter = await consumer.consume({ max_messages: 4000 });
    for await (const msg of iter) {
      messages++;
      if (msg.seq >= state.last_seq) break;
    }
  }
  const used = process.cpuUsage(cpu);
  return { messages, ms: performance.now() - began, cpuMs: (used.user + used.system) / 1000 };
}
