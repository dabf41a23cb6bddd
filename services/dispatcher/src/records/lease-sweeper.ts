import { create, fromBinary, type JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { callFields, type Logger } from "@toolmesh/log";
import { compareAndSet, subjectToken, updateWithRetry } from "@toolmesh/nats";
import {
  CallErrorSchema,
  type CallLease,
  CallLeaseSchema,
  CallStatus,
  PrincipalSchema,
} from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager, JsMsg, KV } from "nats";
import { LEASE_STREAM } from "./call-leases.js";
import type { CallRecorder } from "./call-recorder.js";
import type { OutcomeLookup } from "./outcome-lookup.js";

export interface SweepSettings {
  /** How often the leases are looked at. */
  intervalMs: number;
  /** A Dispatcher silent for this long has vanished. */
  lostAfterMs: number;
  /** How long past its deadline a call of a live Dispatcher may still be recording. */
  graceMs: number;
}

export interface SweepDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The dispatchers bucket: heartbeats, and claims so that two sweepers never close one call. */
  kv: KV;
  lastBeat(instance: string): Promise<number | undefined>;
  recorder: CallRecorder;
  /** Whether a call's outcome was recorded after all. */
  outcomes: OutcomeLookup;
  settings: SweepSettings;
  log: Logger;
}

/** Why a lease was swept: its Dispatcher vanished, or its records never came. */
export type SweepReason = "dispatcher_lost" | "records_lost";

/**
 * Every call with a start record ends with an outcome. Each Dispatcher sweeps the leases now and
 * then: a lease whose Dispatcher stopped heartbeating, or that is past its deadline and grace, is
 * closed as INTERRUPTED with the same records as any other call — TOOL_RESULT, the audit record
 * and the outcome, which Callback broadcasts and memory-writer keeps. The stream holds the leases
 * of running calls and of calls ended since the last bulk purge (a fraction of a second, or held
 * behind a long call up to a bound), so a sweep costs what is running, never what ran.
 */
export class LeaseSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;

  constructor(private readonly deps: SweepDeps) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sweepOnce().catch((error: unknown) => {
        this.deps.log.warn({ err: error }, "lease sweep failed; retrying at the next interval");
      });
    }, this.deps.settings.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping?.catch(() => {});
  }

  /** One pass over the leases; resolves with how many calls it closed. */
  sweepOnce(): Promise<number> {
    this.sweeping ??= this.sweep().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweep(): Promise<number> {
    const { js, jsm, settings } = this.deps;
    const info = await jsm.streams.info(LEASE_STREAM);
    if (info.state.messages === 0) return 0;
    const consumer = await js.consumers.get(LEASE_STREAM);
    const messages = await consumer.fetch({
      max_messages: Math.min(info.state.messages, 10_000),
      expires: 2000,
    });
    const beats = new Map<string, number | undefined>();
    const now = Date.now();
    let closed = 0;
    for await (const m of messages) {
      const lease = fromBinary(CallLeaseSchema, m.data);
      if (!beats.has(lease.instance))
        beats.set(lease.instance, await this.deps.lastBeat(lease.instance));
      const beat = beats.get(lease.instance);
      const alive = beat !== undefined && now - beat < settings.lostAfterMs;
      const deadline = lease.deadline ? timestampMs(lease.deadline) : now;
      const overdue = now > deadline + settings.graceMs;
      if (!alive || overdue) {
        // Released leases wait a moment for their Dispatcher's next purge (or, behind a long
        // call, a while): one whose outcome exists is done, and costs no claim.
        if (await this.deps.outcomes.hasOutcome(lease.callId, startedMsOf(lease, m))) {
          await jsm.streams.deleteMessage(LEASE_STREAM, m.seq, false).catch(() => {});
        } else if (
          await this.close(
            lease,
            m.seq,
            startedMsOf(lease, m),
            alive ? "records_lost" : "dispatcher_lost",
          )
        ) {
          closed++;
        }
      }
      if (m.info.pending === 0) break;
    }
    return closed;
  }

  /** Closes one call, unless another sweeper has it or its outcome exists after all. */
  private async close(
    lease: CallLease,
    sequence: number,
    startedMs: number,
    reason: SweepReason,
  ): Promise<boolean> {
    const claim = `sweeps.${subjectToken(lease.callId)}`;
    if (!(await this.claim(claim))) return false;
    try {
      return await this.closeClaimed(lease, sequence, startedMs, reason);
    } catch (error) {
      // Let the next sweep, ours or another Dispatcher's, try again at once rather than after the
      // claim goes stale.
      await this.deps.kv.delete(claim).catch(() => {});
      throw error;
    }
  }

  /**
   * Takes the claim on closing one call. A claim left by a sweeper that died (or lost NATS)
   * half-way goes stale after a while and is taken over, so no call stays open for good.
   */
  private async claim(key: string): Promise<boolean> {
    const { kv, settings } = this.deps;
    const staleAfter = Math.max(10_000, settings.lostAfterMs * 2);
    // A write lost to another sweeper reads the claim again, and finds it taken.
    return updateWithRetry(`sweep claim "${key}"`, async () => {
      const held = await kv.get(key);
      const since = Number(held?.string());
      if (held?.operation === "PUT" && Number.isFinite(since) && Date.now() - since < staleAfter)
        return false;
      const value = String(Date.now());
      if (held) await compareAndSet(() => kv.update(key, value, held.revision));
      else await compareAndSet(() => kv.create(key, value));
      return true;
    });
  }

  private async closeClaimed(
    lease: CallLease,
    sequence: number,
    startedMs: number,
    reason: SweepReason,
  ): Promise<boolean> {
    const { jsm, log } = this.deps;
    if (await this.deps.outcomes.hasOutcome(lease.callId, startedMs)) {
      await jsm.streams.deleteMessage(LEASE_STREAM, sequence, false).catch(() => {});
      return false;
    }
    const record = this.deps.recorder.begin({
      traceId: lease.traceId,
      callId: lease.callId,
      parentId: lease.parentId,
      tool: lease.tool,
      principal: create(PrincipalSchema, {
        agentId: lease.agentId,
        userId: lease.userId,
        roles: lease.roles,
      }),
    });
    const finishedMs = Math.max(startedMs, Date.now());
    record.finished(
      {
        status: CallStatus.INTERRUPTED,
        reason,
        error: create(CallErrorSchema, {
          code: reason,
          message:
            reason === "dispatcher_lost"
              ? `the Dispatcher running this call (instance ${lease.instance}) stopped before the call ended; whether tool "${lease.tool}" finished is unknown, so check its own state before retrying`
              : `the records of this call were not written before its deadline; whether tool "${lease.tool}" finished is unknown, so check its own state before retrying`,
        }),
      },
      {
        args: (lease.arguments ?? {}) as JsonObject,
        attempts: 0,
        startedMs,
        finishedMs,
      },
    );
    await record.flush();
    await jsm.streams.deleteMessage(LEASE_STREAM, sequence, false).catch(() => {});
    log.warn(
      { ...callFields(lease), instance: lease.instance, reason },
      "closed a call whose outcome was never recorded",
    );
    return true;
  }
}

/** When a leased call started: its lease says so, and was stored as the call began. */
function startedMsOf(lease: CallLease, stored: JsMsg): number {
  const storedMs = stored.info.timestampNanos / 1e6;
  return lease.startedAt ? Math.min(timestampMs(lease.startedAt), storedMs) : storedMs;
}
