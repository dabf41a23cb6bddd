import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import { streamNames, subjects } from "@toolmesh/nats";
import {
  type AuditRecord,
  GetCallRequestSchema,
  GetCallResponseSchema,
  isFinal,
  type TraceEvent,
} from "@toolmesh/proto";
import { answerCallLookup, callOutcome, traceEvents } from "@toolmesh/records";
import type { JetStreamManager, NatsConnection, Subscription } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import type { RecordIndex } from "./record-index.js";
import { AUDIT_CONSUMER } from "./recorder.js";
import type { StoredRecords } from "./stored-records.js";

/** The most records one trace returns (a trace of a few hundred calls). */
const MAX_TRACE_RECORDS = 2000;

/** What reading a call waits for: the index reaching a log sequence. */
export interface IndexProgress {
  waitFor(seq: number): Promise<void>;
}

/**
 * The views of calls Audit serves from its index: a trace's events (GetTrace), a call's records
 * (GetCall, and the Dispatcher's and Callback's lookups over the bus), derived from the records
 * themselves (libs/records) — the audit log is the one store of them.
 */
export class CallReaders {
  constructor(
    private readonly deps: {
      index: RecordIndex;
      /** Where the records the index points at are read from. */
      stored: Pick<StoredRecords, "read">;
      progress: IndexProgress;
      jsm: JetStreamManager;
      log: Logger;
      /** How long a read waits for records still on their way at most. */
      settleMs?: number;
    },
  ) {}

  /**
   * A trace's events, in chain order; empty when none of its records is kept. A trace with no
   * record yet, or with a call whose records state no final outcome, is read again once what the
   * record stream holds now is chained (as callRecords with `wait`): a caller just answered finds
   * its call's trace whole, though Audit chains a call's start with its end a moment later.
   */
  async traceEvents(traceId: string): Promise<TraceEvent[]> {
    const { index, stored } = this.deps;
    const read = () => stored.read(index.recordsOfTrace(traceId, MAX_TRACE_RECORDS));
    let found = await read();
    if (found.length === 0 || !everyCallEnded(found)) {
      await this.settled();
      found = await read();
    }
    return traceEvents(found);
  }

  /**
   * A call's records in chain order. With `wait`, a call whose records state no final outcome
   * yet (none indexed, or running, held or PENDING) is read again once everything the record
   * stream and the log held when asked is chained and this replica indexed it: a caller who was
   * just answered finds the call, a reported end written a moment ago is seen, and a reader that
   * subscribed to the broadcasts before asking (Callback's Watch) misses no end broadcast before
   * its question. A final outcome is never changed by a later record, so it is answered at once.
   */
  async callRecords(callId: string, wait: boolean): Promise<AuditRecord[]> {
    const read = () => this.deps.stored.read(this.deps.index.recordsOfCall(callId));
    const found = await read();
    const outcome = callOutcome(found);
    if (!wait || (outcome && isFinal(outcome.status))) return found;
    await this.settled();
    return read();
  }

  /** Resolves once what the record stream holds now is in the log and indexed here, or times out. */
  private async settled(): Promise<void> {
    const { jsm } = this.deps;
    const until = Date.now() + (this.deps.settleMs ?? 3000);
    const target = (await jsm.streams.info(streamNames.records)).state.last_seq;
    // Once the chain writer's consumer has acked every batch up to `target`, it stored all of
    // them in the log.
    for (let delayMs = 5; Date.now() < until; delayMs = Math.min(delayMs * 2, 100)) {
      const consumer = await jsm.consumers
        .info(streamNames.records, AUDIT_CONSUMER)
        .catch(() => undefined);
      if ((consumer?.ack_floor.stream_seq ?? 0) >= target) break;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    const logLast = (await jsm.streams.info(AUDIT_LOG_STREAM)).state.last_seq;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.deps.progress.waitFor(logLast),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, until - Date.now()));
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Answers the Dispatcher's and Callback's lookups of a call's records on the bus, in a queue
   * group with the other Audit replicas; returns the subscription to drain at stop.
   */
  answerLookups(nc: NatsConnection): Subscription {
    return nc.subscribe(subjects.callLookup, {
      queue: "audit",
      callback: (error, msg) => {
        if (error) return;
        void (async () => {
          try {
            const req = fromBinary(GetCallRequestSchema, msg.data);
            checkLength("call_id", "callId", req.callId);
            const records = await this.callRecords(req.callId, req.wait);
            answerCallLookup(msg, create(GetCallResponseSchema, { records }));
          } catch (error) {
            if (!(error instanceof ConnectError))
              this.deps.log.error({ err: error }, "a call lookup failed");
            answerCallLookup(
              msg,
              error instanceof ConnectError
                ? error
                : new ConnectError("the call lookup failed; retry", Code.Internal),
            );
          }
        })();
      },
    });
  }
}

/** True when each call among these records has a record that states its final outcome. */
function everyCallEnded(records: readonly AuditRecord[]): boolean {
  const byCall = new Map<string, AuditRecord[]>();
  for (const record of records) {
    if (!record.callId) continue;
    const own = byCall.get(record.callId) ?? [];
    own.push(record);
    byCall.set(record.callId, own);
  }
  for (const own of byCall.values()) {
    const outcome = callOutcome(own);
    if (!outcome || !isFinal(outcome.status)) return false;
  }
  return true;
}
