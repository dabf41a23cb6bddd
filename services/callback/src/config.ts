import path from "node:path";
import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, optionalStr, port } from "@toolmesh/config";

/** Every setting of the Callback service, read from the environment. */
export const callbackConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_CALLBACK_PORT", 7104),
  /**
   * How long a call's outcome can be read (GetOutcome, Watch, duplicate Reports) after it
   * finished, and how long a PENDING call's key stays in the bucket after its last write.
   */
  callTtlDays: int("TOOLMESH_CALLBACK_TTL_DAYS", 7, { min: 1, max: 3650 }),
  /** The same in seconds, for short-lived stacks and tests; 0 leaves TTL_DAYS in force. */
  callTtlSeconds: int("TOOLMESH_CALLBACK_TTL_SECONDS", 0, { min: 0, max: 3650 * 86_400 }),
  /**
   * How long a finished call's key stays in the bucket after its broadcast; later it is read from
   * the outcome history. nats-server holds each key in memory (about 0.25 KB), so this bounds its
   * memory to what the calls of this window take.
   */
  callLiveSeconds: int("TOOLMESH_CALLBACK_LIVE_SECONDS", 3600, { min: 1, max: 7 * 86_400 }),
  /** The outcome history's SQLite file; default `<data dir>/callback/outcomes.sqlite`. */
  historyPath: optionalStr("TOOLMESH_CALLBACK_HISTORY_PATH"),
  /** The bucket's size limit; past it the oldest calls go first. */
  callMaxBytes: int("TOOLMESH_CALLBACK_MAX_BYTES", 4 * 1024 ** 3, {
    min: 1024 * 1024,
    max: 1024 ** 5,
  }),
  /** Watches one agent may hold open at once (RESOURCE_EXHAUSTED past it). */
  maxWatchesPerAgent: int("TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT", 64, {
    min: 1,
    max: 100_000,
  }),
  /** How long hourly usage aggregates are kept after their last write. */
  usageRetentionDays: int("TOOLMESH_USAGE_RETENTION_DAYS", 90, { min: 1, max: 3650 }),
  /** The usage bucket's size limit; past it the oldest hours go first. */
  usageMaxBytes: int("TOOLMESH_USAGE_MAX_BYTES", 256 * 1024 ** 2, {
    min: 1024 * 1024,
    max: 1024 ** 5,
  }),
};

export type CallbackConfig = ConfigOf<typeof callbackConfig>;

/** The retention of the call bucket, in milliseconds. */
export function callTtlMs(config: CallbackConfig): number {
  return config.callTtlSeconds > 0
    ? config.callTtlSeconds * 1000
    : config.callTtlDays * 24 * 60 * 60 * 1000;
}

/** Where the outcome history's file is. */
export function historyFile(config: CallbackConfig): string {
  return config.historyPath ?? path.join(config.dataDir, "callback", "outcomes.sqlite");
}
