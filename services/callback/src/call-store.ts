import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { compareAndSet, KvConflictError, kvKeyToken, openBucket } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema, CallErrorSchema } from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager, KV } from "nats";

/** The KV bucket the Callback service owns. */
export const CALLBACK_BUCKET = "toolmesh-callback";

/**
 * Key layout: `calls.<call_id>` → CallbackEvent (PENDING until the final outcome),
 * `sent.<call_id>` → empty once the final event was broadcast. Both expire with the bucket's
 * max age (the configured TTL), so no per-call key stays forever.
 */
export const callKey = (callId: string) => `calls.${kvKeyToken(callId)}`;
export const sentKey = (callId: string) => `sent.${kvKeyToken(callId)}`;

/** The subject every write of a call's key is published on; Watch listens there. */
export const callSubject = (callId: string) => `$KV.${CALLBACK_BUCKET}.${callKey(callId)}`;
/** Every call key's subject. */
export const CALL_SUBJECTS = `$KV.${CALLBACK_BUCKET}.calls.>`;
/** Every sent mark's subject: one message per finished call, read in order to count usage. */
export const SENT_SUBJECTS = `$KV.${CALLBACK_BUCKET}.sent.>`;

/** A stored call and the revision an update must expect. */
export interface StoredCall {
  event: CallbackEvent;
  revision: number;
}

/** How long calls are kept and how much space they may take. */
export interface CallRetention {
  replicas: number;
  /** Every key expires this long after its last write. */
  ttlMs: number;
  /** The bucket's size limit; the oldest keys go first when it is reached. */
  maxBytes: number;
}

/** The calls the Callback service knows: their latest normalised outcome. */
export class CallStore {
  private constructor(
    private readonly kv: KV,
    readonly retention: CallRetention,
  ) {}

  /** Opens (or creates) the bucket and brings its limits to the configured retention. */
  static async open(
    js: JetStreamClient,
    jsm: JetStreamManager,
    retention: CallRetention,
  ): Promise<CallStore> {
    const kv = await openBucket(js, jsm, CALLBACK_BUCKET, retention);
    return new CallStore(kv, retention);
  }

  async get(callId: string): Promise<StoredCall | undefined> {
    const entry = await this.kv.get(callKey(callId));
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return { event: fromBinary(CallbackEventSchema, entry.value), revision: entry.revision };
  }

  /** Stores a PENDING call unless the call is already known; false when it was (a final outcome wins). */
  async createPending(event: CallbackEvent): Promise<boolean> {
    return this.create(event.callId, toBinary(CallbackEventSchema, event));
  }

  /**
   * Stores an encoded event as a call's first value; false when the call is known already (a
   * PENDING call, a Report, or an outcome seen before).
   */
  async create(callId: string, encoded: Uint8Array): Promise<boolean> {
    return this.createKey(callKey(callId), encoded);
  }

  /** Writes a key that must not exist yet; false when it does (the first write wins). */
  private async createKey(key: string, value: Uint8Array): Promise<boolean> {
    try {
      await compareAndSet(() => this.kv.create(key, value));
      return true;
    } catch (error) {
      if (error instanceof KvConflictError) return false;
      throw error;
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

  /**
   * Marks a call broadcast, once: the first mark wins, so every call has exactly one sent mark.
   * The mark carries the call's usage sample (its final event without output or error text),
   * from which the usage counter counts each call once.
   */
  async markBroadcast(event: CallbackEvent): Promise<void> {
    const sample = create(CallbackEventSchema, {
      ...event,
      output: undefined,
      error: event.error ? create(CallErrorSchema, { code: event.error.code }) : undefined,
    });
    await this.createKey(sentKey(event.callId), toBinary(CallbackEventSchema, sample));
  }
}

/** Decodes a call key's value as published on its subject; undefined for deletes. */
export function eventOfValue(data: Uint8Array): CallbackEvent | undefined {
  if (data.length === 0) return undefined;
  return fromBinary(CallbackEventSchema, data);
}
