import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { streamNames } from "@toolmesh/nats";
import {
  type AuditRecord,
  type AuditService,
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  type QueryRecordsRequest,
} from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import { AckPolicy, type NatsConnection } from "nats";
import { eventually } from "./eventually.js";

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

/**
 * What a call's records hold, whichever form Audit chained them in: "start" for each record that
 * holds its start, "end <STATUS>" for each that ends it — a start record and an end record, or
 * the one record of a call that ended soon after it started, read the same.
 */
export function callParts(records: readonly AuditRecord[]): string[] {
  const parts: string[] = [];
  for (const record of records) {
    if (startsCall(record)) parts.push("start");
    if (endsCall(record)) parts.push(`end ${CallStatus[record.status]}`);
  }
  return parts.sort();
}

/**
 * A call's end record once Audit has chained its start and its end (as one record or two):
 * QueryRecords asked until it has both, for at most `timeoutMs`.
 */
export function chainedEnd(
  audit: Client<typeof AuditService>,
  auth: { headers: { authorization: string } },
  callId: string,
  timeoutMs = 30_000,
): Promise<AuditRecord | undefined> {
  return eventually(
    async () => {
      const { records } = await audit.queryRecords({ callId }, auth);
      const parts = callParts(records).map((p) => p.split(" ")[0]);
      if (parts.join() !== "end,start") throw new Error(`records of ${callId}: ${parts.join()}`);
      return records.find(endsCall);
    },
    timeoutMs,
    `the start and end records of ${callId}`,
  );
}

/** One broadcast on the callback feed: the outcome and the Nats-Msg-Id it was stored under. */
export interface FeedBroadcast {
  event: CallbackEvent;
  msgId: string;
}

/**
 * Makes the callback feed keep every broadcast from now on for a test to read (feedBroadcasts): a
 * durable that never acks is interest the feed keeps its broadcasts for, as it does for any
 * subscriber's durable that has not read them yet.
 */
export async function keepFeed(nc: NatsConnection, durable = "test-feed"): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await jsm.consumers.add(streamNames.callback, {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
  });
}

/**
 * Every broadcast the callback feed (TOOLMESH_CALLBACK) holds now, oldest first: every one since
 * keepFeed, which the feed keeps while nothing else would.
 */
export async function feedBroadcasts(nc: NatsConnection): Promise<FeedBroadcast[]> {
  const jsm = await nc.jetstreamManager();
  const { state } = await jsm.streams.info(streamNames.callback);
  if (state.messages === 0) return [];
  // Each message read by its sequence: no consumer whose delivery could end early.
  const found: (FeedBroadcast | undefined)[] = [];
  let next = state.first_seq;
  const reader = async () => {
    for (let seq = next++; seq <= state.last_seq; seq = next++) {
      const msg = await jsm.streams
        .getMessage(streamNames.callback, { seq })
        .catch(() => undefined);
      if (!msg) continue;
      found[seq - state.first_seq] = {
        event: fromBinary(CallbackEventSchema, msg.data),
        msgId: msg.header?.get("Nats-Msg-Id") ?? "",
      };
    }
  };
  await Promise.all(Array.from({ length: 16 }, reader));
  return found.filter((b): b is FeedBroadcast => b !== undefined);
}
