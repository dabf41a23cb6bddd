import { listSegments, SegmentWriter } from "@toolmesh/archive";
import { streamNames } from "@toolmesh/nats";
import { DeliverPolicy, type NatsConnection } from "nats";
import { archivedBlock } from "../../services/audit/src/archiver.js";

/**
 * Seals the audit log's blocks past the archive's last segment into segments, as Audit's Archiver
 * does (its own block mapping, a segment cut once its blocks took `segmentBytes` in the log), and
 * the rest into a last one: the history is older than a segment's age, so a stack that ran it
 * would have sealed it. Run with the services stopped. Resolves with the segments sealed.
 */
export async function archiveLog(
  nc: NatsConnection,
  dir: string,
  segmentBytes: number,
): Promise<number> {
  const jsm = await nc.jetstreamManager();
  const { created, state } = await jsm.streams.info(streamNames.auditLog);
  const from = ((await listSegments(dir)).at(-1)?.lastStreamSeq ?? 0) + 1;
  if (state.last_seq < from) return 0;
  const consumer = await nc.jetstream().consumers.get(streamNames.auditLog, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const messages = await consumer.consume({ max_messages: 1000 });
  const options = { stream: streamNames.auditLog, streamCreated: created };
  let writer: SegmentWriter | undefined;
  let sealed = 0;
  for await (const msg of messages) {
    writer ??= await SegmentWriter.open(dir, options);
    await writer.add(archivedBlock(msg));
    if (writer.stored >= segmentBytes || msg.seq >= state.last_seq) {
      await writer.seal();
      writer = undefined;
      sealed++;
    }
    if (msg.seq >= state.last_seq) break;
  }
  await messages.close();
  return sealed;
}
