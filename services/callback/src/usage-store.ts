import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { nameLimits } from "@toolmesh/names";
import {
  bucketNames,
  compareAndSet,
  kvKeyToken,
  openBucket,
  updateWithRetry,
} from "@toolmesh/nats";
import {
  type CallbackEvent,
  CallStatus,
  type StoredUsage,
  StoredUsageSchema,
  type Usage,
  UsageSchema,
} from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager, KV } from "nats";

/** The bucket of hourly usage aggregates, owned by the Callback service. */
export const USAGE_BUCKET = bucketNames.usage;

const HOUR_MS = 60 * 60 * 1000;

/** The start of the UTC hour `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** `2026072814`: an hour as a key token that sorts in time order. */
export function hourToken(hourMs: number): string {
  return new Date(hourMs).toISOString().slice(0, 13).replaceAll(/[-T]/g, "");
}

/**
 * Key layout: `hours.<YYYYMMDDHH>.<agent>.<user>.<tool>` → StoredUsage (each id escaped as a
 * key token; no user is `=00`), so keys sort by hour. (Earlier versions also kept a
 * `checkpoint` key, which nothing reads now.)
 */
export function usageKey(hourMs: number, agentId: string, userId: string, tool: string): string {
  return `hours.${hourToken(hourMs)}.${kvKeyToken(agentId)}.${kvKeyToken(userId)}.${kvKeyToken(tool)}`;
}

/** A usage key's shape. */
export const USAGE_KEY = /^hours\.\d{10}(\.[A-Za-z0-9_=-]+){3}$/;

/**
 * The longest usage key: ids are printable ASCII within their limits (libs/names), and a key
 * token escapes a character to at most 3 (`=2E`).
 */
export const MAX_USAGE_KEY_LENGTH =
  "hours.".length + 10 + 3 + 3 * (2 * nameLimits.principalId + nameLimits.toolName);

/** What a usage query matches; empty strings match every value. */
export interface UsageFilter {
  agentId: string;
  userId: string;
  tool: string;
  /** Hours from (inclusive) and to (exclusive), epoch ms; undefined for no bound. */
  fromMs?: number;
  toMs?: number;
}

/** What a finished call adds to its hour's usage (kept instead of the whole outcome). */
export interface CountedCall {
  agentId: string;
  userId: string;
  tool: string;
  status: CallStatus;
  durationMs: number;
  /** The hour it counts in: the hour it ended. */
  hourMs: number;
}

/** A finished call's outcome as usage counts it. */
export function countedCall(event: CallbackEvent): CountedCall {
  return {
    agentId: event.agentId,
    userId: event.userId,
    tool: event.tool,
    status: event.status,
    durationMs: event.durationMs,
    hourMs: hourOf(event.time ? timestampMs(event.time) : Date.now()),
  };
}

/** The usage key a call counts under. */
export function usageKeyOf(call: CountedCall): string {
  return usageKey(call.hourMs, call.agentId, call.userId, call.tool);
}

/** One finished call, as it adds to its hour. */
export function addCall(usage: Usage, call: Pick<CountedCall, "status" | "durationMs">): void {
  usage.calls += 1n;
  if (call.status === CallStatus.FAILURE) usage.failures += 1n;
  if (call.status === CallStatus.INTERRUPTED) usage.interrupted += 1n;
  if (call.status === CallStatus.REFUSED) usage.refused += 1n;
  if (call.status !== CallStatus.SUCCESS) usage.errors += 1n;
  usage.durationMs += BigInt(call.durationMs);
}

/** The calls one audit log block adds to one usage key. */
export interface CountedBlock {
  /** The block's sequence in the audit log. */
  seq: number;
  calls: CountedCall[];
}

/** Hourly usage per agent, user and tool in NATS KV, bounded by age and bytes. */
export class UsageStore {
  private constructor(private readonly kv: KV) {}

  /** Opens (or creates) the bucket and applies its retention: oldest hours go first. */
  static async open(
    js: JetStreamClient,
    jsm: JetStreamManager,
    retention: { replicas: number; ttlMs: number; maxBytes: number },
  ): Promise<UsageStore> {
    const kv = await openBucket(js, jsm, USAGE_BUCKET, retention);
    return new UsageStore(kv);
  }

  /**
   * Adds the calls of audit log blocks to one key's hour, each block once: the key remembers the
   * blocks it counted (those above the consumer's ack `floor`), so a block delivered again — to
   * this replica or another, in any order — adds nothing. Blocks at or below the floor were acked
   * and never come again, so they are forgotten. Returns the calls it added.
   */
  async add(key: string, blocks: readonly CountedBlock[], floor: number): Promise<CountedCall[]> {
    const first = blocks[0]?.calls[0];
    if (!first) return [];
    // Another replica may write the key meanwhile: read it again and add what it has not.
    return updateWithRetry(`usage key "${key}"`, async () => {
      const entry = await this.kv.get(key);
      const stored: StoredUsage | undefined =
        entry?.operation === "PUT" && entry.value.length > 0
          ? fromBinary(StoredUsageSchema, entry.value)
          : undefined;
      const counted = new Set((stored?.countedBlocks ?? []).map(Number));
      const fresh = blocks.filter((b) => !counted.has(b.seq));
      if (fresh.length === 0) return [];
      const usage =
        stored?.usage ??
        create(UsageSchema, {
          hour: timestampFromMs(first.hourMs),
          agentId: first.agentId,
          userId: first.userId,
          tool: first.tool,
        });
      for (const block of fresh) for (const call of block.calls) addCall(usage, call);
      for (const block of fresh) counted.add(block.seq);
      const value = toBinary(
        StoredUsageSchema,
        create(StoredUsageSchema, {
          usage,
          countedBlocks: [...counted]
            .filter((seq) => seq > floor)
            .sort((x, y) => x - y)
            .map(BigInt),
        }),
      );
      if (entry && stored) await compareAndSet(() => this.kv.update(key, value, entry.revision));
      else await compareAndSet(() => this.kv.create(key, value));
      return fresh.flatMap((b) => b.calls);
    });
  }

  /** The keys matching a filter, in hour order (then agent, user, tool). */
  async keys(filter: UsageFilter): Promise<string[]> {
    const token = (value: string) => (value === "" ? "*" : kvKeyToken(value));
    const pattern = `hours.*.${token(filter.agentId)}.${token(filter.userId)}.${token(filter.tool)}`;
    const from = filter.fromMs === undefined ? "" : hourToken(filter.fromMs);
    const to = filter.toMs === undefined ? "" : hourToken(filter.toMs);
    const found: string[] = [];
    for await (const key of await this.kv.keys(pattern)) {
      const hour = key.split(".")[1] ?? "";
      if ((from === "" || hour >= from) && (to === "" || hour < to)) found.push(key);
    }
    return found.sort();
  }

  async get(key: string): Promise<Usage | undefined> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return fromBinary(StoredUsageSchema, entry.value).usage;
  }
}
