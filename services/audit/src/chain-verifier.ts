import { fromBinary } from "@bufbuild/protobuf";
import { AuditRecordSchema } from "@toolmesh/proto";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import { type ChainBreak, ChainChecker } from "./hash-chain.js";

/**
 * Verifies the chain as the log stream holds it (the source of truth, not the index), from
 * `fromSequence` or the oldest kept record, whichever is later, up to the last record at the time
 * of the call. Records dropped by retention are not a break: the oldest kept record is trusted
 * for its link, and a gap that retention opened while this ran is skipped the same way. Reads the
 * stream in order, holding one record at a time.
 */
export async function verifyChain(
  js: JetStreamClient,
  jsm: JetStreamManager,
  fromSequence: bigint,
): Promise<{ checked: number; break?: ChainBreak }> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  const start = Math.max(state.first_seq, Number(fromSequence), 1);
  const checker = new ChainChecker();
  if (state.messages === 0 || start > state.last_seq) return { checked: 0 };
  const consumer = await js.consumers.get(AUDIT_LOG_STREAM, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: start,
  });
  const messages = await consumer.consume({ max_messages: 1000 });
  try {
    for await (const msg of messages) {
      const found = checker.check(fromBinary(AuditRecordSchema, msg.data));
      if (found && !(found.kind === "missing" && (await trimmedBelow(jsm, msg.seq)))) {
        return { checked: checker.checked, break: found };
      }
      if (msg.seq >= state.last_seq || msg.info.pending === 0) break;
    }
  } finally {
    await messages.close();
  }
  return { checked: checker.checked };
}

/** True when retention has dropped every record before `seq` since the check began. */
async function trimmedBelow(jsm: JetStreamManager, seq: number): Promise<boolean> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  return state.first_seq >= seq;
}
