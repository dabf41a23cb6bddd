import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  compareAndSet,
  KvConflictError,
  kvKeyToken,
  openBucket,
  updateWithRetry,
} from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import { type JetStreamClient, type JetStreamManager, type KV, headers as natsHeaders } from "nats";

/** The KV bucket the Callback service owns. */
export const CALLBACK_BUCKET = "toolmesh-callback";

/**
 * Key layout: `calls.<call_id>` → CallbackEvent (PENDING until the final outcome), written once
 * more, marked, when the final event was broadcast. The bucket holds the calls that are live:
 * nats-server keeps every distinct subject of a stream in memory, so a key per call kept for days
 * made its memory grow with history. A PENDING key lives the bucket's max age (the TTL); the
 * marked write carries a `Nats-TTL` of the live window, after which the key is gone and the call
 * is found in the outcome history (outcome-history.ts) instead.
 */
export const callKey = (callId: string) => `calls.${kvKeyToken(callId)}`;

/** The subject every write of a call's key is published on; Watch listens there. */
export const callSubject = (callId: string) => `$KV.${CALLBACK_BUCKET}.${callKey(callId)}`;
/** Every call key's subject. */
export const CALL_SUBJECTS = `$KV.${CALLBACK_BUCKET}.calls.>`;
/** The sent marks of earlier versions: one empty or sample key per broadcast call. */
export const LEGACY_SENT_SUBJECTS = `$KV.${CALLBACK_BUCKET}.sent.>`;

/**
 * The first byte of a call's value once its final event was broadcast. An encoded CallbackEvent
 * never starts with it (field number 0 does not exist in Protobuf), so values written before
 * marks existed read as they are.
 */
const BROADCAST_MARK = 0;

/** A call's stored value, marked as broadcast or not. */
export function encodeCall(event: Uint8Array, broadcast: boolean): Uint8Array {
  if (!broadcast) return event;
  const marked = new Uint8Array(event.length + 1);
  marked[0] = BROADCAST_MARK;
  marked.set(event, 1);
  return marked;
}

/** Decodes a call key's value as published on its subject; undefined for deletes. */
export function callOfValue(
  data: Uint8Array,
): { event: CallbackEvent; broadcast: boolean } | undefined {
  if (data.length === 0) return undefined;
  const broadcast = data[0] === BROADCAST_MARK;
  const event = fromBinary(CallbackEventSchema, broadcast ? data.subarray(1) : data);
  return { event, broadcast };
}

/** True when a call key's value carries the broadcast mark (without decoding it). */
export function isBroadcastMark(data: Uint8Array): boolean {
  return data.length > 0 && data[0] === BROADCAST_MARK;
}

/** A stored call and the revision an update must expect. */
export interface StoredCall {
  event: CallbackEvent;
  revision: number;
  /** The final event was broadcast (and its usage counted from this write). */
  broadcast: boolean;
}

/** How long calls are kept and how much space they may take. */
export interface CallRetention {
  replicas: number;
  /** Every key expires this long after its last write. */
  ttlMs: number;
  /** A finished call's key expires this long after its broadcast (TOOLMESH_CALLBACK_LIVE_SECONDS). */
  liveMs: number;
  /** The bucket's size limit; the oldest keys go first when it is reached. */
  maxBytes: number;
}

/** The calls the Callback service knows: their latest normalised outcome. */
export class CallStore {
  private constructor(
    private readonly js: JetStreamClient,
    private readonly kv: KV,
    readonly retention: CallRetention,
  ) {}

  /** Opens (or creates) the bucket and brings its limits to the configured retention. */
  static async open(
    js: JetStreamClient,
    jsm: JetStreamManager,
    retention: CallRetention,
  ): Promise<CallStore> {
    const kv = await openBucket(js, jsm, CALLBACK_BUCKET, { ...retention, messageTtl: true });
    return new CallStore(js, kv, retention);
  }

  async get(callId: string): Promise<StoredCall | undefined> {
    const entry = await this.kv.get(callKey(callId));
    if (entry?.operation !== "PUT") return undefined;
    const call = callOfValue(entry.value);
    return call && { ...call, revision: entry.revision };
  }

  /** Stores a PENDING call unless the call is already known; false when it was (a final outcome wins). */
  async createPending(event: CallbackEvent): Promise<boolean> {
    return (await this.create(event.callId, toBinary(CallbackEventSchema, event))) !== undefined;
  }

  /**
   * Stores an encoded event as a call's first value and returns its revision; undefined when the
   * call is known already (a PENDING call, a Report, or an outcome seen before).
   */
  async create(callId: string, encoded: Uint8Array): Promise<number | undefined> {
    try {
      return await compareAndSet(() => this.kv.create(callKey(callId), encoded));
    } catch (error) {
      if (error instanceof KvConflictError) return undefined;
      throw error;
    }
  }

  /** Writes a call whatever it held; returns the new revision. */
  async put(event: CallbackEvent): Promise<number> {
    return this.kv.put(callKey(event.callId), toBinary(CallbackEventSchema, event));
  }

  /**
   * Replaces a call only if nobody wrote it since `revision`; KvConflictError otherwise. Returns
   * the new revision.
   */
  async update(event: CallbackEvent, revision: number): Promise<number> {
    const value = toBinary(CallbackEventSchema, event);
    return compareAndSet(() => this.kv.update(callKey(event.callId), value, revision));
  }

  /**
   * Marks a call broadcast, once: the final event is written again with the mark, expecting the
   * revision the broadcaster wrote or read. Every broadcast call gets exactly one marked write,
   * from which the usage counter counts it: a replica that lost the race finds the mark there.
   */
  async markBroadcast(event: CallbackEvent, revision: number): Promise<void> {
    const ttl = natsHeaders();
    ttl.set("Nats-TTL", `${Math.max(1, Math.round(this.retention.liveMs / 1000))}s`);
    await updateWithRetry(`call "${event.callId}" (its broadcast mark)`, async (attempt) => {
      if (attempt > 1) {
        const stored = await this.get(event.callId);
        if (!stored || stored.broadcast) return;
        // What is stored is what the call keeps; the mark goes on it.
        event = stored.event;
        revision = stored.revision;
      }
      const value = encodeCall(toBinary(CallbackEventSchema, event), true);
      await compareAndSet(() =>
        this.js.publish(callSubject(event.callId), value, {
          headers: ttl,
          expect: { lastSubjectSequence: revision },
        }),
      );
    });
  }
}

/** The event of a call key's value as published on its subject; undefined for deletes. */
export function eventOfValue(data: Uint8Array): CallbackEvent | undefined {
  return callOfValue(data)?.event;
}
