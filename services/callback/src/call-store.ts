import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { compareAndSet, KvConflictError, kvKeyToken } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import type { JetStreamClient, KV, KvEntry, QueuedIterator } from "nats";

/** The KV bucket the Callback service owns. */
export const CALLBACK_BUCKET = "toolmesh-callback";

/**
 * Key layout: `calls.<call_id>` → CallbackEvent (PENDING until the final outcome),
 * `sent.<call_id>` → empty once the final event was broadcast.
 */
const callKey = (callId: string) => `calls.${kvKeyToken(callId)}`;
const sentKey = (callId: string) => `sent.${kvKeyToken(callId)}`;

/** A stored call and the revision an update must expect. */
export interface StoredCall {
  event: CallbackEvent;
  revision: number;
}

/** The calls the Callback service knows: their latest normalised outcome. */
export class CallStore {
  private constructor(private readonly kv: KV) {}

  /** Opens (or creates) the bucket; ttlMs 0 keeps calls until deleted. */
  static async open(
    js: JetStreamClient,
    settings: { replicas: number; ttlMs: number },
  ): Promise<CallStore> {
    const kv = await js.views.kv(CALLBACK_BUCKET, {
      history: 1,
      replicas: settings.replicas,
      ttl: settings.ttlMs,
    });
    return new CallStore(kv);
  }

  async get(callId: string): Promise<StoredCall | undefined> {
    const entry = await this.kv.get(callKey(callId));
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return { event: fromBinary(CallbackEventSchema, entry.value), revision: entry.revision };
  }

  /** Stores a PENDING call unless the call is already known (a final outcome wins). */
  async createPending(event: CallbackEvent): Promise<void> {
    try {
      await compareAndSet(() =>
        this.kv.create(callKey(event.callId), toBinary(CallbackEventSchema, event)),
      );
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
    }
  }

  async put(event: CallbackEvent): Promise<void> {
    await this.kv.put(callKey(event.callId), toBinary(CallbackEventSchema, event));
  }

  /** Replaces a call only if nobody wrote it since `revision`; KvConflictError otherwise. */
  async update(event: CallbackEvent, revision: number): Promise<void> {
    await compareAndSet(() =>
      this.kv.update(callKey(event.callId), toBinary(CallbackEventSchema, event), revision),
    );
  }

  async wasBroadcast(callId: string): Promise<boolean> {
    const entry = await this.kv.get(sentKey(callId));
    return entry !== null && entry.operation === "PUT";
  }

  async markBroadcast(callId: string): Promise<void> {
    await this.kv.put(sentKey(callId), new Uint8Array());
  }

  /** Every value the call takes from now on, starting with the current one. */
  watch(callId: string): Promise<QueuedIterator<KvEntry>> {
    return this.kv.watch({ key: callKey(callId) });
  }
}

/** Decodes a watched entry; undefined for deletes. */
export function eventOf(entry: KvEntry): CallbackEvent | undefined {
  if (entry.operation !== "PUT" || entry.value.length === 0) return undefined;
  return fromBinary(CallbackEventSchema, entry.value);
}
