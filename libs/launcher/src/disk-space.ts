import { statfsSync } from "node:fs";

/** When the data directory's disk counts as nearly full. */
export interface DiskThresholds {
  /** Warn below this many free bytes. */
  minFreeBytes: number;
  /** Warn below this share of the disk free (0–1). */
  minFreeRatio: number;
}

export const defaultDiskThresholds: DiskThresholds = {
  minFreeBytes: 2 * 1024 ** 3,
  minFreeRatio: 0.1,
};

/**
 * A warning when the disk holding `dir` is nearly full, or undefined. A full disk makes the
 * record streams refuse writes, and then every call is refused (fail closed); the operator should
 * hear of it before that.
 */
export function diskSpaceWarning(
  dir: string,
  thresholds: DiskThresholds = defaultDiskThresholds,
): string | undefined {
  const stats = statfsSync(dir);
  const free = stats.bavail * stats.bsize;
  const total = stats.blocks * stats.bsize;
  if (free >= thresholds.minFreeBytes && free >= total * thresholds.minFreeRatio) return undefined;
  const gib = (bytes: number) => (bytes / 1024 ** 3).toFixed(1);
  return `the disk holding ${dir} has ${gib(free)} GiB free of ${gib(total)} GiB; when it fills, NATS refuses records and toolmesh refuses every call. Free space, or move TOOLMESH_DATA_DIR to a larger disk.`;
}
