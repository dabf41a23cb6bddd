import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  bucketNames,
  compareAndSet,
  KvConflictError,
  kvKeyToken,
  openKv,
  retryBetweenLeaders,
} from "@toolmesh/nats";
import { type DispatchResponse, DispatchResponseSchema } from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";

/** The KV bucket the Dispatcher owns: `idem.<agent>.<key>` → DispatchResponse, TTL = window. */
export const DISPATCHER_BUCKET = bucketNames.dispatcher;

/** First outcomes by (agent, idempotency key), for replays within the window. */
export interface IdempotencyStore {
  get(agentId: string, key: string): Promise<DispatchResponse | undefined>;
  put(agentId: string, key: string, response: DispatchResponse): Promise<void>;
}

function keyOf(agentId: string, key: string): string {
  return `idem.${kvKeyToken(agentId)}.${kvKeyToken(key)}`;
}

/** Stored in NATS KV, so replays survive restarts and work across replicas. */
export class KvIdempotencyStore implements IdempotencyStore {
  constructor(private readonly kv: KV) {}

  /** Opens (or creates) the Dispatcher's bucket; keys live for the idempotency window. */
  static async open(
    nc: NatsConnection,
    settings: { windowMs: number; replicas: number },
  ): Promise<KvIdempotencyStore> {
    const kv = await openKv(nc.jetstream(), DISPATCHER_BUCKET, {
      ttl: settings.windowMs,
      history: 1,
      replicas: settings.replicas,
    });
    return new KvIdempotencyStore(kv);
  }

  async get(agentId: string, key: string): Promise<DispatchResponse | undefined> {
    const entry = await this.kv.get(keyOf(agentId, key));
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return fromBinary(DispatchResponseSchema, entry.value);
  }

  async put(agentId: string, key: string, response: DispatchResponse): Promise<void> {
    await this.kv.put(keyOf(agentId, key), toBinary(DispatchResponseSchema, response));
  }
}

/** In memory, for handler tests. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly map = new Map<string, DispatchResponse>();
  async get(agentId: string, key: string): Promise<DispatchResponse | undefined> {
    return this.map.get(keyOf(agentId, key));
  }
  async put(agentId: string, key: string, response: DispatchResponse): Promise<void> {
    this.map.set(keyOf(agentId, key), response);
  }
}

/** The KV bucket of call id owners: `calls.<call_id>` → the agent id that first used it. */
export const CALL_ID_BUCKET = bucketNames.callIds;

/**
 * Who owns each call id: the agent that first dispatched with it. Another agent reusing the id
 * is refused, so it can neither hide nor take over the owner's call (its outcome, its memory
 * entry, a PENDING call's Report). Entries expire with the outcomes they protect.
 */
export interface CallIdOwners {
  /** True when `agentId` owns `callId` (now or from before); false when another agent does. */
  claim(callId: string, agentId: string): Promise<boolean>;
}

const ownerKey = (callId: string) => `calls.${kvKeyToken(callId)}`;

/** Stored in NATS KV, so ownership holds across restarts and replicas. */
export class KvCallIdOwners implements CallIdOwners {
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor(private readonly kv: KV) {}

  /** Opens (or creates) the bucket; ttlMs 0 keeps owners as long as outcomes are kept (forever). */
  static async open(
    nc: NatsConnection,
    settings: { ttlMs: number; replicas: number },
  ): Promise<KvCallIdOwners> {
    const kv = await openKv(nc.jetstream(), CALL_ID_BUCKET, {
      ttl: settings.ttlMs,
      history: 1,
      replicas: settings.replicas,
    });
    return new KvCallIdOwners(kv);
  }

  async claim(callId: string, agentId: string): Promise<boolean> {
    const key = ownerKey(callId);
    try {
      await retryBetweenLeaders(() =>
        compareAndSet(() => this.kv.create(key, this.encoder.encode(agentId))),
      );
      return true;
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
    }
    const entry = await retryBetweenLeaders(() => this.kv.get(key));
    return entry?.operation === "PUT" && this.decoder.decode(entry.value) === agentId;
  }
}

/** In memory, for handler tests. */
export class MemoryCallIdOwners implements CallIdOwners {
  readonly owners = new Map<string, string>();
  async claim(callId: string, agentId: string): Promise<boolean> {
    const owner = this.owners.get(callId);
    if (owner === undefined) this.owners.set(callId, agentId);
    return owner === undefined || owner === agentId;
  }
}
