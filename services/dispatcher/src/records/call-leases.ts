import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { subjects } from "@toolmesh/nats";
import { type CallLease, CallLeaseSchema } from "@toolmesh/proto";
import type { JetStreamManager } from "nats";
import type { EventPublisher } from "./event-publisher.js";

/** The stream that holds the leases of running calls. */
export const LEASE_STREAM = "TOOLMESH_INFLIGHT";

/**
 * Where a Dispatcher keeps the start records of its running calls. A lease is opened (and, for a
 * tool with side effects, acked) before the tool runs and released once the call's outcome is
 * recorded; whatever is still open when its Dispatcher vanished is closed by a sweeper.
 */
export interface LeaseLedger {
  /** This process's instance id, named in each lease and in its heartbeat. */
  readonly instance: string;
  /** Publishes the lease; resolves with its stream sequence once JetStream acked it. */
  open(lease: CallLease): Promise<number>;
  /** Lets the lease go; a failure is only logged (the sweeper finds the outcome and drops it). */
  release(sequence: number): void;
}

export interface LeasePurgeSettings {
  /** How often released leases are purged, all at once. */
  intervalMs: number;
  /** Released leases held back by an older running call before new ones are deleted singly. */
  maxLingering: number;
  /**
   * How long past its deadline a lease whose publish failed keeps the purge below it: the one
   * case where a stored lease may be unknown here, left to the sweeper.
   */
  holdAfterDeadlineMs: number;
}

const DEFAULT_PURGE: LeasePurgeSettings = {
  intervalMs: 100,
  maxLingering: 1000,
  holdAfterDeadlineMs: 120_000,
};

/**
 * Leases in the TOOLMESH_INFLIGHT stream, one message a running call. Deleting each lease when
 * its call ends cost JetStream a tombstone and an fsync per call, as much as a record; instead
 * released leases are purged together, a few times a second, in one request: everything of this
 * instance below its oldest still-running lease. Acks of one connection's publishes to one stream
 * come in stream order, so every lease below the highest acked one is known here, running or
 * released. Leases left above a long-running call are few; past `maxLingering` they are deleted
 * one by one as before, so the stream never fills behind a slow call.
 */
export class JetStreamLeases implements LeaseLedger {
  private readonly running = new Set<number>();
  /** Released, not yet purged (above the last purge point). */
  private lingering: number[] = [];
  private maxAcked = 0;
  private purgedBelow = 0;
  private purging = false;
  /** Purge floors kept for leases whose publish failed, until the time they expire. */
  private readonly holds = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly settings: LeasePurgeSettings;

  constructor(
    readonly instance: string,
    private readonly publisher: EventPublisher,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    settings: Partial<LeasePurgeSettings> = {},
  ) {
    this.settings = { ...DEFAULT_PURGE, ...settings };
    this.timer = setInterval(() => void this.purge(), this.settings.intervalMs);
    this.timer.unref();
  }

  open(lease: CallLease): Promise<number> {
    // Whatever sequence this lease gets, it is above every lease acked so far.
    const floor = this.maxAcked + 1;
    // Registered before the returned promise settles, so release() always finds it.
    return this.publisher
      .publishMessage(subjects.inflight(this.instance, lease.callId), CallLeaseSchema, lease)
      .then(
        ({ seq }) => {
          this.running.add(seq);
          if (seq > this.maxAcked) this.maxAcked = seq;
          return seq;
        },
        (error: unknown) => {
          // The lease may be stored though its ack never came: keep the purge below it.
          const deadline = lease.deadline ? timestampMs(lease.deadline) : Date.now();
          this.holds.set(floor, deadline + this.settings.holdAfterDeadlineMs);
          throw error;
        },
      );
  }

  release(sequence: number): void {
    if (sequence <= 0 || !this.running.delete(sequence)) return;
    if (this.lingering.length < this.settings.maxLingering) {
      this.lingering.push(sequence);
      return;
    }
    this.jsm.streams.deleteMessage(LEASE_STREAM, sequence, false).catch((error: unknown) => {
      this.log.warn(
        { err: error, sequence },
        "could not delete a call lease; the sweeper will drop it",
      );
    });
  }

  /** Leases released and not yet purged; read by tests. */
  get unpurged(): number {
    return this.lingering.length;
  }

  /** Purges this instance's leases below the oldest one still running, in one request. */
  async purge(): Promise<void> {
    if (this.purging || this.lingering.length === 0) return;
    const below = this.purgeFloor();
    if (below <= this.purgedBelow) return;
    this.purging = true;
    try {
      await this.jsm.streams.purge(LEASE_STREAM, {
        filter: subjects.inflightOf(this.instance),
        seq: below,
      });
      this.purgedBelow = below;
      this.lingering = this.lingering.filter((sequence) => sequence >= below);
    } catch (error) {
      this.log.warn({ err: error }, "could not purge released call leases; will retry");
    } finally {
      this.purging = false;
    }
  }

  private purgeFloor(): number {
    let below = this.maxAcked + 1;
    for (const sequence of this.running) if (sequence < below) below = sequence;
    const now = Date.now();
    for (const [floor, until] of this.holds) {
      if (until < now) this.holds.delete(floor);
      else if (floor < below) below = floor;
    }
    return below;
  }

  /** Stops the purge timer and purges what can be, once. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.purge();
  }
}

/** Leases kept in memory, for tests of the chain without NATS. */
export class MemoryLeases implements LeaseLedger {
  private readonly leases = new Map<number, CallLease>();
  private sequence = 0;

  constructor(readonly instance = "memory") {}

  open(lease: CallLease): Promise<number> {
    const sequence = ++this.sequence;
    this.leases.set(sequence, lease);
    return Promise.resolve(sequence);
  }

  release(sequence: number): void {
    this.leases.delete(sequence);
  }

  /** The leases not yet released. */
  get held(): CallLease[] {
    return [...this.leases.values()];
  }
}
