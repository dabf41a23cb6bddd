import { create } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { AdminEvents, subjects } from "@toolmesh/nats";
import { type ChangeType, type Principal, RegistryChangedSchema } from "@toolmesh/proto";
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
  publish(write: RegistryWrite): Promise<void>;
}

/** Publishes to TOOLMESH_CHANGES and TOOLMESH_AUDIT through the shared admin-change publisher. */
export class NatsRegistryEvents implements RegistryEvents {
  private readonly events: AdminEvents;

  constructor(js: JetStreamClient, log: Logger) {
    this.events = new AdminEvents(js, log, "registry");
  }

  publish(write: RegistryWrite): Promise<void> {
    return this.events.publish(
      {
        subject: subjects.registryChanged(write.kind, write.name),
        schema: RegistryChangedSchema,
        value: (time) =>
          create(RegistryChangedSchema, {
            type: write.type,
            kind: write.kind,
            name: write.name,
            revision: BigInt(write.revision),
            changedBy: write.by.agentId,
            time,
          }),
      },
      { by: write.by, tool: write.name, reason: write.reason },
    );
  }
}

/** Keeps events in memory, for handler tests. */
export class RecordedEvents implements RegistryEvents {
  readonly writes: RegistryWrite[] = [];
  async publish(write: RegistryWrite): Promise<void> {
    this.writes.push(write);
  }
}
