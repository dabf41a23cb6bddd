import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, port } from "@toolmesh/config";

/** Every setting of the Callback service, read from the environment. */
export const callbackConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_CALLBACK_PORT", 7104),
  /** Watches one agent may hold open at once (RESOURCE_EXHAUSTED past it). */
  maxWatchesPerAgent: int("TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT", 64, {
    min: 1,
    max: 100_000,
  }),
  /**
   * How long a group of more than one broadcast waits for more before it is stored, so that one
   * atomic batch (one fixed cost on nats-server) carries more of them; a lone outcome goes at once.
   */
  lingerMs: int("TOOLMESH_CALLBACK_LINGER_MS", 100, { min: 0, max: 5000 }),
  /** How long hourly usage aggregates are kept after their last write. */
  usageRetentionDays: int("TOOLMESH_USAGE_RETENTION_DAYS", 90, { min: 1, max: 3650 }),
  /** The usage bucket's size limit; past it the oldest hours go first. */
  usageMaxBytes: int("TOOLMESH_USAGE_MAX_BYTES", 256 * 1024 ** 2, {
    min: 1024 * 1024,
    max: 1024 ** 5,
  }),
};

export type CallbackConfig = ConfigOf<typeof callbackConfig>;
