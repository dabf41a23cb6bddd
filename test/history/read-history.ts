import { streamNames } from "@toolmesh/nats";
import type { JetStreamClient, JetStreamManager } from "nats";

/** Every stream that holds a message (or more) per call: the records, the log and the feed. */
export const perCallStreams = [streamNames.records, streamNames.auditLog, streamNames.callback];

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
