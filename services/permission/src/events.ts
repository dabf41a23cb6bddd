import { create } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { AdminEvents, subjects } from "@toolmesh/nats";
import { type ChangeType, PermissionChangedSchema, type Principal } from "@toolmesh/proto";
import type { JetStreamClient } from "nats";

/** What changed: a grant, an API key, a rate limit or a budget, created, updated or removed. */
export interface PermissionChange {
  kind:
    | "grant"
    | "api_key"
    | "rate_limit"
    | "budget"
    | "secret"
    | "oauth_provider"
    | "connection"
    | "signing_key";
  id: string;
  type: ChangeType;
  /** One sentence for the audit record, never a secret. */
  reason: string;
}

/** Where Permission announces its writes. */
export interface PermissionEvents {
  publish(by: Principal, change: PermissionChange): Promise<void>;
}

/**
 * Publishes PermissionChanged on TOOLMESH_CHANGES and an ADMIN audit record on TOOLMESH_AUDIT
 * after a write, through the shared admin-change publisher.
 */
export class NatsPermissionEvents implements PermissionEvents {
  private readonly events: AdminEvents;

  constructor(js: JetStreamClient, log: Logger) {
    this.events = new AdminEvents(js, log, "permission");
  }

  publish(by: Principal, change: PermissionChange): Promise<void> {
    return this.events.publish(
      {
        subject: subjects.permissionChanged(change.kind, change.id),
        schema: PermissionChangedSchema,
        value: (time) =>
          create(PermissionChangedSchema, {
            type: change.type,
            kind: change.kind,
            id: change.id,
            changedBy: by.agentId,
            time,
          }),
      },
      { by, reason: change.reason },
    );
  }
}

/** Keeps changes in memory, for handler tests. */
export class RecordedPermissionEvents implements PermissionEvents {
  readonly changes: { by: Principal; change: PermissionChange }[] = [];
  async publish(by: Principal, change: PermissionChange): Promise<void> {
    this.changes.push({ by, change });
  }
}
