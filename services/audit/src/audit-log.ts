import { subjectToken } from "@toolmesh/nats";
import { DiscardPolicy, nanos, RetentionPolicy, StorageType, type StreamConfig } from "nats";

/** The stream the Audit service owns: chained records, in blocks. */
export const AUDIT_LOG_STREAM = "TOOLMESH_AUDIT_LOG";

/** Where blocks are appended; a block holds records of any agent and tool. */
export const AUDIT_BLOCK_SUBJECT = "toolmesh.auditlog.block";

/**
 * Where a record was stored when each log message held one (before blocks); such messages stay
 * in the log and are read as blocks of one.
 */
export function auditLogSubject(agentId: string, tool: string): string {
  return `toolmesh.auditlog.${subjectToken(agentId)}.${subjectToken(tool)}`;
}

/**
 * The log stream's definition. maxAgeMs 0 keeps records until deleted; maxBytes 0 sets no byte
 * limit. Reaching a limit drops the oldest records (the chain then verifies from the oldest kept).
 */
export function auditLogStream(settings: {
  replicas: number;
  maxAgeMs: number;
  maxBytes: number;
}): Partial<StreamConfig> {
  return {
    name: AUDIT_LOG_STREAM,
    subjects: ["toolmesh.auditlog.>"],
    description: "The hash-chained access log written by the Audit service",
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: settings.replicas,
    max_age: nanos(settings.maxAgeMs),
    max_bytes: settings.maxBytes > 0 ? settings.maxBytes : -1,
    duplicate_window: nanos(2 * 60 * 1000),
    deny_delete: true,
    deny_purge: true,
  };
}
