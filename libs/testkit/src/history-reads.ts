import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { streamNames } from "@toolmesh/nats";
import {
  type AuditRecord,
  type AuditService,
  type CallbackEvent,
  CallbackEventSchema,
  type QueryRecordsRequest,
} from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import { TEST_JS_OPTIONS } from "./jetstream.js";

/** A QueryRecords filter (its fields other than times and paging). */
export type RecordFilter = Partial<
  Pick<QueryRecordsRequest, "agentId" | "userId" | "tool" | "status" | "traceId" | "callId">
>;

/**
 * Every record of a call, by call id, that QueryRecords finds for each filter (page by page, so
 * any number of calls): what Audit's index, and its archive, hold of them.
 */
export async function recordsByCall(
  audit: Client<typeof AuditService>,
  auth: { headers: { authorization: string } },
  filters: readonly RecordFilter[],
): Promise<Map<string, AuditRecord[]>> {
  const byCall = new Map<string, AuditRecord[]>();
  for (const filter of filters) {
    let pageToken = "";
    do {
      const page = await audit.queryRecords({ ...filter, pageSize: 1000, pageToken }, auth);
      for (const r of page.records) byCall.set(r.callId, [...(byCall.get(r.callId) ?? []), r]);
      pageToken = page.nextPageToken;
    } while (pageToken);
  }
  return byCall;
}

/** One broadcast on the callback feed: the outcome and the Nats-Msg-Id it was stored under. */
export interface FeedBroadcast {
  event: CallbackEvent;
  msgId: string;
}

/** Every broadcast the callback feed (TOOLMESH_CALLBACK) holds now, oldest first. */
export async function feedBroadcasts(nc: NatsConnection): Promise<FeedBroadcast[]> {
  const jsm = await nc.jetstreamManager();
  const { state } = await jsm.streams.info(streamNames.callback);
  if (state.messages === 0) return [];
  // An ordered consumer from the first message (nats.js delivers nothing when given a policy).
  const consumer = await nc.jetstream(TEST_JS_OPTIONS).consumers.get(streamNames.callback);
  const found: FeedBroadcast[] = [];
  const messages = await consumer.consume();
  for await (const msg of messages) {
    found.push({
      event: fromBinary(CallbackEventSchema, msg.data),
      msgId: msg.headers?.get("Nats-Msg-Id") ?? "",
    });
    if (msg.seq >= state.last_seq || msg.info.pending === 0) break;
  }
  await messages.close();
  return found;
}
