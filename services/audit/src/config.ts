import { authConfig } from "@toolmesh/auth";
import {
  type ConfigOf,
  callSweepConfig,
  commonConfig,
  int,
  list,
  optionalStr,
  port,
} from "@toolmesh/config";

const GIB = 1024 * 1024 * 1024;

/** Every setting of the Audit service, read from the environment. */
export const auditConfig = {
  ...commonConfig,
  ...authConfig,
  ...callSweepConfig,
  port: port("TOOLMESH_AUDIT_PORT", 7103),
  /** How long the chained log keeps records; 0 keeps them until deleted. */
  maxAgeDays: int("TOOLMESH_AUDIT_MAX_AGE_DAYS", 365, { min: 0, max: 36500 }),
  /** The chained log's byte limit; reaching it drops the oldest records. 0: no limit. */
  maxBytes: int("TOOLMESH_AUDIT_MAX_BYTES", 10 * GIB, { min: 0 }),
  /** At this share of maxBytes the operator is warned, long before records are dropped. */
  bytesWarnPercent: int("TOOLMESH_AUDIT_BYTES_WARN_PERCENT", 80, { min: 1, max: 99 }),
  /** How often retention is checked (stream usage, trimmed records leave the index). */
  retentionCheckMs: int("TOOLMESH_AUDIT_RETENTION_CHECK_MS", 60_000, {
    min: 100,
    max: 24 * 60 * 60 * 1000,
  }),
  /** The query index (SQLite); default `<data dir>/audit/index.sqlite`. */
  indexPath: optionalStr("TOOLMESH_AUDIT_INDEX_PATH"),
  /** Key patterns hidden in stored records on top of the defaults (docs/security.md). */
  redactKeys: list("TOOLMESH_REDACT_KEYS", []),
};

export type AuditConfig = ConfigOf<typeof auditConfig>;
