import { toBinary } from "@bufbuild/protobuf";
import { callFields, type Logger } from "@toolmesh/log";
import { buckets, type JetStreamPublisher, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  RecordBatchSchema,
} from "@toolmesh/proto";
import { encodeRecords } from "@toolmesh/records";
import { type KV, headers as natsHeaders } from "nats";
import { type InterruptedReason, interruptedEnd } from "./interrupted-end.js";
import type { RecordIndex } from "./record-index.js";
import type { StoredRecords } from "./stored-records.js";

/** How often and when calls left open are closed (libs/config callSweepConfig). */
export interface OpenCallSweepSettings {
  intervalMs: number;
  /** A Dispatcher silent this long has vanished. */
  dispatcherLostAfterMs: number;
  /** How long past its deadline a call may still be writing its end record. */
  leaseGraceMs: number;
}

/** Calls closed a sweep at most; the rest wait for the next. */
const SWEEP_BATCH = 500;

/**
 * Closes calls whose start record has no end record long after their deadline: the Dispatcher
 * that ran one vanished (INTERRUPTED `dispatcher_lost`), or could not store its end
 * (`records_lost`). The end record is written to the record stream like any other, so it is
 * chained after whatever was written before it — a Dispatcher's own end record already on its way
 * wins, and the later one of the two is stored once (libs/records recordKey). Runs in the chain
 * writer's lease: one sweeper at a time.
 */
export class OpenCallSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  private kv: KV | undefined;

  constructor(
    private readonly deps: {
      index: RecordIndex;
      /** Where the records the index points at are read from. */
      stored: Pick<StoredRecords, "read">;
      /** The Dispatchers' heartbeat bucket; rejects while no Dispatcher has created it. */
      heartbeats: () => Promise<KV>;
      publisher: Pick<JetStreamPublisher, "publish">;
      settings: OpenCallSweepSettings;
      log: Logger;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sweepOnce().catch((error: unknown) => {
        this.deps.log.warn({ err: error }, "open call sweep failed; retrying at the next interval");
      });
    }, this.deps.settings.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping?.catch(() => {});
  }

  /** One pass; resolves with how many calls it closed. */
  sweepOnce(): Promise<number> {
    this.sweeping ??= this.sweep().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweep(): Promise<number> {
    const { index, settings } = this.deps;
    const now = Date.now();
    const open = index.openCallsPast(now - settings.leaseGraceMs, SWEEP_BATCH);
    if (open.length === 0) return 0;
    this.kv ??= await this.deps.heartbeats();
    const kv = this.kv;
    let closed = 0;
    const alive = new Map<string, boolean>();
    for (const call of open) {
      let live = alive.get(call.instance);
      if (live === undefined) {
        const beat = buckets.dispatchers.beatTime(
          await kv.get(buckets.dispatchers.instanceKey(call.instance)),
        );
        live = beat !== undefined && now - beat < settings.dispatcherLostAfterMs;
        alive.set(call.instance, live);
      }
      const start = (await this.deps.stored.read(index.recordsOfCall(call.callId))).find(
        (r) => r.action === AuditAction.TOOL_START,
      );
      if (!start) continue;
      await this.close(start, live ? "records_lost" : "dispatcher_lost", now);
      closed++;
    }
    return closed;
  }

  /** Writes the INTERRUPTED end record of a call left open. */
  private async close(start: AuditRecord, reason: InterruptedReason, now: number): Promise<void> {
    const end = interruptedEnd({ ...start, startedAt: start.time }, reason, now);
    const h = natsHeaders();
    h.set(TYPE_HEADER, RecordBatchSchema.typeName);
    h.set("Nats-Msg-Id", `sweep-${start.callId}`);
    await this.deps.publisher.publish(
      subjects.records("audit"),
      encodeRecords([toBinary(AuditRecordSchema, end)]),
      h,
    );
    this.deps.log.warn(
      { ...callFields(start), tool: start.tool, reason },
      "closed a call left open past its deadline",
    );
  }
}
