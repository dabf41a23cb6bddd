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
const CHECKPOINT_KEY = "checkpoint";

/** The start of the UTC hour `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** `2026072814`: an hour as a key token that sorts in time order. */
export function hourToken(hourMs: number): string {
  return new Date(hourMs).toISOString().slice(0, 13).replaceAll(/[-T]/g, "");
}

/**
 * Key layout: `hours.<YYYYMMDDHH>.<agent>.<user>.<tool>` → StoredUsage (each id escaped as a
 * key token; no user is `=00`), so keys sort by hour, and `checkpoint` → the last sequence of
 * the sent-mark stream the counter has read.
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

/** One finished call, as it adds to its hour. */
export function addCall(usage: Usage, event: CallbackEvent): void {
  usage.calls += 1n;
  if (event.status === CallStatus.FAILURE) usage.failures += 1n;
  if (event.status === CallStatus.INTERRUPTED) usage.interrupted += 1n;
  if (event.status === CallStatus.REFUSED) usage.refused += 1n;
  if (event.status !== CallStatus.SUCCESS) usage.errors += 1n;
  usage.durationMs += BigInt(event.durationMs);
}

/** The hour a finished call counts in: the hour it ended. */
export function callHour(event: CallbackEvent): number {
  return hourOf(event.time ? timestampMs(event.time) : Date.now());
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
   * Adds calls to one key's hour: `calls` are events of that key read at stream sequences up to
   * `sequence`, in order. Those at or below the sequence the key already absorbed are skipped, so
   * a replay (after a restart, or by a second replica) adds nothing twice. Returns the calls it
   * added.
   */
  async add(
    key: string,
    calls: { event: CallbackEvent; sequence: number }[],
  ): Promise<CallbackEvent[]> {
    const first = calls[0]?.event;
    if (!first) return [];
    // Another replica may write the key meanwhile: read it again and add what it has not.
    return updateWithRetry(`usage key "${key}"`, async () => {
      const entry = await this.kv.get(key);
      const stored: StoredUsage | undefined =
        entry?.operation === "PUT" && entry.value.length > 0
          ? fromBinary(StoredUsageSchema, entry.value)
          : undefined;
      const applied = stored ? Number(stored.appliedSequence) : 0;
      const fresh = calls.filter((c) => c.sequence > applied);
      if (fresh.length === 0) return [];
      const usage =
        stored?.usage ??
        create(UsageSchema, {
          hour: timestampFromMs(callHour(first)),
          agentId: first.agentId,
          userId: first.userId,
          tool: first.tool,
        });
      for (const c of fresh) addCall(usage, c.event);
      const value = toBinary(
        StoredUsageSchema,
        create(StoredUsageSchema, {
          usage,
          appliedSequence: BigInt(fresh[fresh.length - 1]?.sequence ?? applied),
        }),
      );
      if (entry && stored) await compareAndSet(() => this.kv.update(key, value, entry.revision));
      else await compareAndSet(() => this.kv.create(key, value));
      return fresh.map((c) => c.event);
    });
  }

  /** The last sent-mark sequence read, or 0. */
  async checkpoint(): Promise<number> {
    const entry = await this.kv.get(CHECKPOINT_KEY);
    return entry?.operation === "PUT" ? Number(entry.string()) || 0 : 0;
  }

  /** Moves the checkpoint forward (never back: a slower replica must not rewind it). */
  async saveCheckpoint(sequence: number): Promise<void> {
    await updateWithRetry("the usage checkpoint", async () => {
      const entry = await this.kv.get(CHECKPOINT_KEY);
      const current = entry?.operation === "PUT" ? Number(entry.string()) || 0 : 0;
      if (current >= sequence) return;
      if (entry)
        await compareAndSet(() => this.kv.update(CHECKPOINT_KEY, String(sequence), entry.revision));
      else await compareAndSet(() => this.kv.create(CHECKPOINT_KEY, String(sequence)));
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
