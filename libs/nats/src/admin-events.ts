import { randomUUID } from "node:crypto";
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { type Timestamp, timestampNow } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  CallStatus,
  type Principal,
} from "@toolmesh/proto";
import type { JetStreamClient } from "nats";
import { publishEvent } from "./events.js";
import { subjects } from "./streams.js";

/** The ADMIN audit record of a change: who made it and what it did, never a secret. */
export interface AdminAudit {
  by: Principal;
  /** The tool the change concerns, if any. */
  tool?: string;
  /** One sentence: `register tool`, `created grant <id>: allow …`. */
  reason: string;
}

/**
 * Announces an admin change: a change event on TOOLMESH_CHANGES (for watchers and caches) and an
 * ADMIN audit record on the record stream (TOOLMESH_RECORDS), which Audit chains. The write itself is already stored in its bucket, the
 * source of truth every cache watches, so a failed publish is logged rather than turned into a
 * failed RPC that a client would retry into a second write.
 */
export class AdminEvents {
  constructor(
    private readonly js: JetStreamClient,
    private readonly log: Logger,
    /** The service that made the change, as audit records and their subject name it. */
    private readonly source: "registry" | "permission",
  ) {}

  /** Publishes both messages and waits for their acks (or their failure, logged). */
  async publish<Desc extends DescMessage>(
    change: { subject: string; schema: Desc; value: (time: Timestamp) => MessageShape<Desc> },
    audit: AdminAudit,
  ): Promise<void> {
    const id = randomUUID();
    const time = timestampNow();
    await Promise.all([
      this.send(change.subject, change.schema, change.value(time), `${id}-change`),
      this.send(
        subjects.records(this.source),
        AuditRecordSchema,
        adminRecord(id, time, audit, this.source),
        id,
      ),
    ]);
  }

  private async send<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    msgId: string,
  ): Promise<void> {
    try {
      await publishEvent(this.js, subject, schema, value, { msgId, timeoutMs: 5000 });
    } catch (error) {
      this.log.error({ err: error, subject }, "could not publish an admin change event");
    }
  }
}

/** The ADMIN audit record of one change. */
export function adminRecord(
  id: string,
  time: Timestamp,
  audit: AdminAudit,
  source: string,
): AuditRecord {
  return create(AuditRecordSchema, {
    id,
    time,
    action: AuditAction.ADMIN,
    tool: audit.tool ?? "",
    agentId: audit.by.agentId,
    userId: audit.by.userId,
    roles: [...audit.by.roles],
    status: CallStatus.SUCCESS,
    reason: audit.reason,
    source,
  });
}
