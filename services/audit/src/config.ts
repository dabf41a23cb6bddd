import path from "node:path";
import { authConfig } from "@toolmesh/auth";
import {
  bytes,
  type ConfigOf,
  callSweepConfig,
  commonConfig,
  int,
  list,
  optionalStr,
  port,
  type Reader,
} from "@toolmesh/config";

const MiB = 1024 * 1024;
const GIB = 1024 * MiB;
const DAY_MS = 24 * 60 * 60 * 1000;
const HISTORY_DAYS = { min: 0, max: 36500 };

/**
 * How long the archive keeps a segment, in days (0: forever). TOOLMESH_AUDIT_MAX_AGE_DAYS, how
 * long the log kept records before it had an archive, is read when the new name is unset.
 */
const archiveMaxAgeDays: Reader<number> = (env) =>
  int(
    "TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_DAYS",
    int("TOOLMESH_AUDIT_MAX_AGE_DAYS", 365, HISTORY_DAYS)(env),
    HISTORY_DAYS,
  )(env);

/** Every setting of the Audit service, read from the environment. */
export const auditConfig = {
  ...commonConfig,
  ...authConfig,
  ...callSweepConfig,
  port: port("TOOLMESH_AUDIT_PORT", 7103),
  /**
   * The hot log's byte limit: past it the oldest blocks leave the log, and only blocks already
   * archived and read by every durable consumer of the log may leave. 0: no limit.
   */
  maxBytes: int("TOOLMESH_AUDIT_MAX_BYTES", 10 * GIB, { min: 0 }),
  /** How often retention is checked (usage gauges, index rows of deleted segments). */
  /**
   * How long the chain writer lets a little work wait for more before it chains it: at a low
   * rate a block would hold one record, and each block costs a stored write and its headers.
   */
  lingerMs: int("TOOLMESH_AUDIT_LINGER_MS", 20, { min: 0, max: 1000 }),
  /**
   * How long a call's start record waits for its end, so that the log keeps a call that ended
   * within it as one record (0: always two).
   */
  mergeMs: int("TOOLMESH_AUDIT_MERGE_MS", 1000, { min: 0, max: 4000 }),
  retentionCheckMs: int("TOOLMESH_AUDIT_RETENTION_CHECK_MS", 60_000, {
    min: 100,
    max: 24 * 60 * 60 * 1000,
  }),
  /** The query index (SQLite); default `<data dir>/audit/index.sqlite`. */
  indexPath: optionalStr("TOOLMESH_AUDIT_INDEX_PATH"),
  /** Where sealed segments go; default `<data dir>/audit/archive` (shared by every replica). */
  archiveDir: optionalStr("TOOLMESH_AUDIT_ARCHIVE_DIR"),
  /** A segment is sealed once the log past the last one holds this much; 0: min(64 MiB, max bytes / 8). */
  segmentBytes: bytes("TOOLMESH_AUDIT_SEGMENT_BYTES", 0, { min: 0 }),
  /** ... or once its oldest block is this old. */
  segmentMaxAgeMs: int("TOOLMESH_AUDIT_SEGMENT_MAX_AGE_MS", 60 * 60 * 1000, {
    min: 100,
    max: 7 * DAY_MS,
  }),
  archiveMaxAgeDays,
  /** The same in seconds, for short-lived stacks and tests; overrides the days when set. */
  archiveMaxAgeSeconds: int("TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_SECONDS", 0, {
    min: 0,
    max: 36500 * 86_400,
  }),
  /** Key patterns hidden in stored records on top of the defaults (docs/security.md). */
  redactKeys: list("TOOLMESH_REDACT_KEYS", []),
};

export type AuditConfig = ConfigOf<typeof auditConfig>;

/** The archive's settings as the Archiver takes them, defaults resolved. */
export function archiveSettings(config: AuditConfig): {
  dir: string;
  segmentBytes: number;
  segmentMaxAgeMs: number;
  maxAgeMs: number;
} {
  const auto = config.maxBytes > 0 ? Math.min(64 * MiB, Math.floor(config.maxBytes / 8)) : 64 * MiB;
  return {
    dir: config.archiveDir ?? path.join(config.dataDir, "audit", "archive"),
    segmentBytes: config.segmentBytes > 0 ? config.segmentBytes : auto,
    segmentMaxAgeMs: config.segmentMaxAgeMs,
    maxAgeMs:
      config.archiveMaxAgeSeconds > 0
        ? config.archiveMaxAgeSeconds * 1000
        : config.archiveMaxAgeDays * DAY_MS,
  };
}
