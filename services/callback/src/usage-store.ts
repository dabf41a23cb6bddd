import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { nameLimits } from "@toolmesh/names";
import { bucketNames, kvKeyToken, openBucket } from "@toolmesh/nats";
import {
  type AuditRecord,
  CacheUse,
  type CallbackEvent,
  CallStatus,
  StoredSpendSchema,
  StoredUsageSchema,
  type Usage,
  UsageSchema,
} from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager, KV } from "nats";
import { addBlocksOnce, type BlockShare } from "./counted-blocks.js";

/** The bucket of hourly usage aggregates, owned by the Callback service. */
export const USAGE_BUCKET = bucketNames.usage;

const HOUR_MS = 60 * 60 * 1000;

/** The start of the UTC hour `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** The last hour hourToken was asked for: every counted call asks, nearly always the same hour. */
let lastHour = { ms: Number.NaN, token: "" };

/** `2026072814`: an hour as a key token that sorts in time order. */
export function hourToken(hourMs: number): string {
  if (hourMs !== lastHour.ms)
    lastHour = {
      ms: hourMs,
      token: new Date(hourMs).toISOString().slice(0, 13).replaceAll(/[-T]/g, ""),
    };
  return lastHour.token;
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
  /** When it ended (epoch ms): the day and month of budgets it counts in. */
  endedMs?: number;
  /** What it cost, for a priced tool. */
  cost?: { currency: string; micros: bigint };
  /** The budgets its cost counts against, and the Dispatcher instance that counted it. */
  budgets?: string[];
  countedBy?: string;
  /** Whether its tool's result cache answered it. */
  cache?: CacheUse;
}

/** A finished call's outcome, and its end record, as usage counts it. */
export function countedCall(
  event: CallbackEvent,
  record: Pick<AuditRecord, "budgets" | "countedBy" | "cache"> = {
    budgets: [],
    countedBy: "",
    cache: CacheUse.UNSPECIFIED,
  },
): CountedCall {
  const endedMs = event.time ? timestampMs(event.time) : Date.now();
  return {
    agentId: event.agentId,
    userId: event.userId,
    tool: event.tool,
    status: event.status,
    durationMs: event.durationMs,
    endedMs,
    hourMs: hourOf(endedMs),
    ...(event.cost ? { cost: { currency: event.cost.currency, micros: event.cost.micros } } : {}),
    budgets: record.budgets,
    countedBy: record.countedBy,
    cache: record.cache,
  };
}

/** The usage key a call counts under. */
export function usageKeyOf(call: CountedCall): string {
  return usageKey(call.hourMs, call.agentId, call.userId, call.tool);
}

/** One finished call, as it adds to its hour. */
export function addCall(
  usage: Usage,
  call: Pick<CountedCall, "status" | "durationMs" | "cost" | "cache">,
): void {
  usage.calls += 1n;
  if (call.status === CallStatus.FAILURE) usage.failures += 1n;
  if (call.status === CallStatus.INTERRUPTED) usage.interrupted += 1n;
  if (call.status === CallStatus.REFUSED) usage.refused += 1n;
  if (call.status !== CallStatus.SUCCESS) usage.errors += 1n;
  usage.durationMs += BigInt(call.durationMs);
  if (call.cache === CacheUse.HIT) usage.cacheHits += 1n;
  if (call.cache === CacheUse.MISS) usage.cacheMisses += 1n;
  if (call.cost && call.cost.micros > 0n)
    usage.costMicros[call.cost.currency] =
      (usage.costMicros[call.cost.currency] ?? 0n) + call.cost.micros;
}

/** The calls one audit log block adds to one usage key. */
export interface CountedBlock extends BlockShare {
  calls: CountedCall[];
}

/** What the calls of one audit log block cost against one budget's period. */
export interface SpentBlock extends BlockShare {
  costs: { micros: bigint; countedBy: string }[];
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
   * Adds the calls of audit log blocks to one key's hour, each block once (counted-blocks.ts).
   * Returns the calls it added.
   */
  async add(key: string, blocks: readonly CountedBlock[], floor: number): Promise<CountedCall[]> {
    const first = blocks[0]?.calls[0];
    if (!first) return [];
    const fresh = await addBlocksOnce(
      this.kv,
      key,
      StoredUsageSchema,
      blocks,
      floor,
      (stored, fresh) => {
        const usage =
          stored?.usage ??
          create(UsageSchema, {
            hour: timestampFromMs(first.hourMs),
            agentId: first.agentId,
            userId: first.userId,
            tool: first.tool,
          });
        for (const block of fresh) for (const call of block.calls) addCall(usage, call);
        return create(StoredUsageSchema, { usage });
      },
    );
    return fresh.flatMap((b) => b.calls);
  }

  /**
   * Adds what the calls of audit log blocks cost to one budget's period (`spend.<budget>.<period>`),
   * each block once, and by the Dispatcher instance that counted each.
   */
  async addSpend(
    key: string,
    spend: { budgetId: string; period: string; currency: string },
    blocks: readonly SpentBlock[],
    floor: number,
  ): Promise<void> {
    await addBlocksOnce(this.kv, key, StoredSpendSchema, blocks, floor, (stored, fresh) => {
      const next = stored ?? create(StoredSpendSchema, spend);
      for (const block of fresh)
        for (const { micros, countedBy } of block.costs) {
          next.spentMicros += micros;
          next.byInstance[countedBy] = (next.byInstance[countedBy] ?? 0n) + micros;
        }
      return next;
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
