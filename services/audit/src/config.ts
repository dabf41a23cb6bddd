import { authConfig } from "@toolmesh/auth";
import { type ConfigOf, commonConfig, int, list, port } from "@toolmesh/config";
import { defaultSecretKeyPatterns } from "@toolmesh/log";

/** Every setting of the Audit service, read from the environment. */
export const auditConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_AUDIT_PORT", 7103),
  /** How long the chained log keeps records; 0 keeps them until deleted. */
  maxAgeDays: int("TOOLMESH_AUDIT_MAX_AGE_DAYS", 365, { min: 0, max: 36500 }),
  redactKeys: list("TOOLMESH_AUDIT_REDACT_KEYS", defaultSecretKeyPatterns),
};

export type AuditConfig = ConfigOf<typeof auditConfig>;
