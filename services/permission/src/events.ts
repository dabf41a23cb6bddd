import { randomUUID } from "node:crypto";
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { publishEvent, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  type ChangeType,
  PermissionChangedSchema,
  type Principal,
} from "@toolmesh/proto";
import type { JetStreamClient } from "nats";

/** What changed: a grant or an API key, created or removed. */
export interface PermissionChange {
  kind: "grant" | "api_key";
  id: string;
  type: ChangeType;
  /** One sentence for the audit record, never a secret. */
  reason: string;
}

/**
 * Publishes PermissionChanged on TOOLMESH_CHANGES and an ADMIN audit record on TOOLMESH_AUDIT
 * after a write. The bucket is the source of truth (every cache also watches it), so a failed
 * publish is logged, not turned into a failed RPC that a client would retry into a duplicate.
 */
export class ChangePublisher {
  constructor(
    private readonly js: JetStreamClient,
    private readonly log: Logger,
  ) {}

  async published(by: Principal, change: PermissionChange): Promise<void> {
    const eventId = randomUUID();
    const time = timestampNow();
    await Promise.all([
      this.publish(
        subjects.permissionChanged(change.kind, change.id),
        PermissionChangedSchema,
        create(PermissionChangedSchema, {
          type: change.type,
          kind: change.kind,
          id: change.id,
          changedBy: by.agentId,
          time,
        }),
        `${eventId}-change`,
      ),
      this.publish(
        subjects.audit(by.agentId, ""),
        AuditRecordSchema,
        create(AuditRecordSchema, {
          id: eventId,
          time,
          action: AuditAction.ADMIN,
          agentId: by.agentId,
          userId: by.userId,
          roles: by.roles,
          reason: change.reason,
          source: "permission",
        }),
        eventId,
      ),
    ]);
  }

  private async publish<D extends DescMessage>(
    subject: string,
    schema: D,
    value: MessageShape<D>,
    msgId: string,
  ): Promise<void> {
    try {
      await publishEvent(this.js, subject, schema, value, { msgId, timeoutMs: 5000 });
    } catch (error) {
      this.log.error({ err: error, subject }, "could not publish a permission event");
    }
  }
}
