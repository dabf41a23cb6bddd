import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, list, port } from "@toolmesh/config";

/** Every setting of the Audit service, read from the environment. */
export const auditConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_AUDIT_PORT", 7103),
  /** How long the chained log keeps records; 0 keeps them until deleted. */
  maxAgeDays: int("TOOLMESH_AUDIT_MAX_AGE_DAYS", 365, { min: 0, max: 36500 }),
  /** Key patterns hidden in stored records on top of the defaults (docs/security.md). */
  redactKeys: list("TOOLMESH_REDACT_KEYS", []),
};

export type AuditConfig = ConfigOf<typeof auditConfig>;
