import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { kvKeyToken } from "@toolmesh/nats";
import { type DispatchResponse, DispatchResponseSchema } from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";

/** The KV bucket the Dispatcher owns: `idem.<agent>.<key>` → DispatchResponse, TTL = window. */
export const DISPATCHER_BUCKET = "toolmesh-dispatcher";

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
    const kv = await nc.jetstream().views.kv(DISPATCHER_BUCKET, {
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
