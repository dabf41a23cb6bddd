import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { publishEvent, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  CallStatus,
  type ChangeType,
  type Principal,
  type RegistryChanged,
  RegistryChangedSchema,
} from "@toolmesh/proto";
import type { JetStreamClient } from "nats";

/** One write the registry made, as told to the rest of the system. */
export interface RegistryWrite {
  type: ChangeType;
  kind: "tool" | "group";
  name: string;
  revision: number;
  by: Principal;
  /** What the admin action did, for the audit record: `register tool`, `delete group` ... */
  reason: string;
}

/** Where the registry announces its writes: a RegistryChanged event and an admin audit record. */
export interface RegistryEvents {
  written(write: RegistryWrite): Promise<void>;
}

/** The two messages a write produces. */
export function eventsOf(write: RegistryWrite): { changed: RegistryChanged; audit: AuditRecord } {
  const time = timestampNow();
  return {
    changed: create(RegistryChangedSchema, {
      type: write.type,
      kind: write.kind,
      name: write.name,
      revision: BigInt(write.revision),
      changedBy: write.by.agentId,
      time,
    }),
    audit: create(AuditRecordSchema, {
      id: randomUUID(),
      time,
      action: AuditAction.ADMIN,
      tool: write.name,
      agentId: write.by.agentId,
      userId: write.by.userId,
      roles: [...write.by.roles],
      status: CallStatus.SUCCESS,
      reason: write.reason,
      source: "registry",
    }),
  };
}

/**
 * Publishes to TOOLMESH_CHANGES and TOOLMESH_AUDIT and waits for both acks. The write is already
 * stored when this runs, so a failed publish is logged, not returned to the caller.
 */
export class NatsRegistryEvents implements RegistryEvents {
  constructor(
    private readonly js: JetStreamClient,
    private readonly log: Logger,
  ) {}

  async written(write: RegistryWrite): Promise<void> {
    const { changed, audit } = eventsOf(write);
    const results = await Promise.allSettled([
      publishEvent(
        this.js,
        subjects.registryChanged(write.kind, write.name),
        RegistryChangedSchema,
        changed,
      ),
      publishEvent(
        this.js,
        subjects.audit(write.by.agentId, write.name),
        AuditRecordSchema,
        audit,
        {
          msgId: audit.id,
        },
      ),
    ]);
    for (const result of results) {
      if (result.status === "rejected")
        this.log.error(
          { err: result.reason, kind: write.kind, name: write.name },
          "could not publish a registry event",
        );
    }
  }
}

/** Keeps events in memory, for handler tests. */
export class RecordedEvents implements RegistryEvents {
  readonly writes: RegistryWrite[] = [];
  async written(write: RegistryWrite): Promise<void> {
    this.writes.push(write);
  }
}
