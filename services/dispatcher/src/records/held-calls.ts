import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  bucketNames,
  compareAndSet,
  KvConflictError,
  kvKeyToken,
  openBucket,
} from "@toolmesh/nats";
import { type HeldCall, HeldCallSchema } from "@toolmesh/proto";
import type { JetStreamManager, KV, NatsConnection } from "nats";

/** The Dispatchers' bucket of calls held for approval: `calls.<call_id>` → HeldCall. */
export const APPROVALS_BUCKET = bucketNames.approvals;

const keyOf = (callId: string) => `calls.${kvKeyToken(callId)}`;

/** A held call and the revision a compare-and-set update must expect. */
export interface StoredHeldCall {
  held: HeldCall;
  revision: number;
}

/**
 * Where held calls wait for their approver. Any Dispatcher replica can decide, run or expire a
 * call, so the state lives on the bus and every change of state is compare-and-set: two
 * approvers (or an approver and the expiry sweep) cannot both win.
 */
export interface HeldCallStore {
  /** Stores a new held call; KvConflictError when its call id is held already. */
  create(held: HeldCall): Promise<void>;
  get(callId: string): Promise<StoredHeldCall | undefined>;
  /** Replaces a held call written at `revision`; KvConflictError when it changed since. */
  update(held: HeldCall, revision: number): Promise<void>;
  delete(callId: string): Promise<void>;
  /** Every held call, in no particular order. */
  list(): Promise<StoredHeldCall[]>;
}

/** Held calls in NATS KV, shared by every Dispatcher. */
export class KvHeldCalls implements HeldCallStore {
  private constructor(private readonly kv: KV) {}

  /**
   * Opens (or creates) the bucket. Keys outlive the longest hold by `marginMs`, so the expiry
   * sweep always finds an expired call before the bucket forgets it.
   */
  static async open(
    nc: NatsConnection,
    jsm: JetStreamManager,
    settings: { holdMs: number; marginMs: number; replicas: number },
  ): Promise<KvHeldCalls> {
    const kv = await openBucket(nc.jetstream(), jsm, APPROVALS_BUCKET, {
      ttlMs: settings.holdMs + settings.marginMs,
      replicas: settings.replicas,
    });
    return new KvHeldCalls(kv);
  }

  async create(held: HeldCall): Promise<void> {
    const callId = held.approval?.callId ?? "";
    await compareAndSet(() => this.kv.create(keyOf(callId), toBinary(HeldCallSchema, held)));
  }

  async get(callId: string): Promise<StoredHeldCall | undefined> {
    const entry = await this.kv.get(keyOf(callId));
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return { held: fromBinary(HeldCallSchema, entry.value), revision: entry.revision };
  }

  async update(held: HeldCall, revision: number): Promise<void> {
    const callId = held.approval?.callId ?? "";
    await compareAndSet(() =>
      this.kv.update(keyOf(callId), toBinary(HeldCallSchema, held), revision),
    );
  }

  async delete(callId: string): Promise<void> {
    await this.kv.delete(keyOf(callId));
  }

  async list(): Promise<StoredHeldCall[]> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys("calls.>")) keys.push(key);
    const found: StoredHeldCall[] = [];
    for (const entry of await Promise.all(keys.map((key) => this.kv.get(key)))) {
      if (entry?.operation !== "PUT" || entry.value.length === 0) continue;
      found.push({ held: fromBinary(HeldCallSchema, entry.value), revision: entry.revision });
    }
    return found;
  }
}

/** Held calls in memory, for handler tests. */
export class MemoryHeldCalls implements HeldCallStore {
  private readonly calls = new Map<string, StoredHeldCall>();
  private revision = 0;

  async create(held: HeldCall): Promise<void> {
    const callId = held.approval?.callId ?? "";
    if (this.calls.has(callId)) throw new KvConflictError(`call ${callId} is held already`);
    this.calls.set(callId, { held, revision: ++this.revision });
  }

  async get(callId: string): Promise<StoredHeldCall | undefined> {
    return this.calls.get(callId);
  }

  async update(held: HeldCall, revision: number): Promise<void> {
    const callId = held.approval?.callId ?? "";
    if (this.calls.get(callId)?.revision !== revision)
      throw new KvConflictError(`call ${callId} changed since revision ${revision}`);
    this.calls.set(callId, { held, revision: ++this.revision });
  }

  async delete(callId: string): Promise<void> {
    this.calls.delete(callId);
  }

  async list(): Promise<StoredHeldCall[]> {
    return [...this.calls.values()];
  }
}
