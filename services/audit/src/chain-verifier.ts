import { type ChainBreak, ChainChecker, readLogMessage } from "@toolmesh/archive";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "nats";
import { AUDIT_LOG_STREAM, logReadBatch } from "./audit-log.js";

/**
 * Verifies the chain as the log stream holds it (the source of truth, not the index), from the
 * record at `fromSequence` or the oldest kept record, whichever is later, up to the last record
 * at the time of the call. `locate` names the log message (block) to start reading at for a
 * record sequence, from the index; the records before `fromSequence` in it are skipped. Records
 * dropped by retention are not a break: the oldest kept record is trusted for its link, and a
 * gap that retention opened while this ran is skipped the same way. Reads the stream in order,
 * holding one message at a time.
 */
export async function verifyChain(
  js: JetStreamClient,
  jsm: JetStreamManager,
  fromSequence: bigint,
  locate: (sequence: bigint) => number | undefined = () => undefined,
): Promise<{ checked: number; break?: ChainBreak }> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  const located = fromSequence > 0n ? (locate(fromSequence) ?? 0) : 0;
  const start = Math.max(state.first_seq, located, 1);
  const checker = new ChainChecker();
  if (state.messages === 0 || start > state.last_seq) return { checked: 0 };
  const consumer = await js.consumers.get(AUDIT_LOG_STREAM, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: start,
  });
  const messages = await consumer.consume({ max_messages: logReadBatch(state, 1000) });
  let skipping = fromSequence > 0n;
  try {
    for await (const msg of messages) {
      for (const [i, { record }] of readLogMessage(msg.headers, msg.data).entries()) {
        // Only records before the first one asked for are skipped; every one after it counts.
        if (skipping && record.sequence < fromSequence) continue;
        skipping = false;
        const found = checker.check(record);
        // A gap before the first record of the oldest kept message is retention's doing.
        const trimmed = found?.kind === "missing" && i === 0 && (await trimmedBelow(jsm, msg.seq));
        if (found && !trimmed) return { checked: checker.checked, break: found };
      }
      if (msg.seq >= state.last_seq || msg.info.pending === 0) break;
    }
  } finally {
    await messages.close();
  }
  return { checked: checker.checked };
}

/** True when retention has dropped every message before `seq` since the check began. */
async function trimmedBelow(jsm: JetStreamManager, seq: number): Promise<boolean> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  return state.first_seq >= seq;
}
