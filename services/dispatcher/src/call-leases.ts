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
  /** Deletes the lease; a failure is only logged (the sweeper finds the outcome and drops it). */
  release(sequence: number): void;
}

/** Leases in the TOOLMESH_INFLIGHT stream, one message a running call. */
export class JetStreamLeases implements LeaseLedger {
  constructor(
    readonly instance: string,
    private readonly publisher: EventPublisher,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
  ) {}

  open(lease: CallLease): Promise<number> {
    return this.publisher.publish(
      subjects.inflight(this.instance, lease.callId),
      CallLeaseSchema,
      lease,
    );
  }

  release(sequence: number): void {
    if (sequence <= 0) return;
    this.jsm.streams.deleteMessage(LEASE_STREAM, sequence, false).catch((error: unknown) => {
      this.log.warn(
        { err: error, sequence },
        "could not delete a call lease; the sweeper will drop it",
      );
    });
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
