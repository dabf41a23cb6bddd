import type { Logger } from "@toolmesh/log";
import { buckets, loadWhenCreated, ReconnectingKvSnapshot } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import { ToolSchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import type { PermissionGate } from "./chain.js";
import type { ToolSource } from "./tool-catalog.js";

/** The registry's tools and the grants, read from their owners' KV buckets. */
export interface Snapshots {
  tools: ToolSource;
  policy: PermissionGate;
  stop(): void;
}

/**
 * Watches the registry and permission buckets. They belong to their services: until a bucket
 * exists and its snapshot has loaded, the matching side reports not ready and every call fails
 * closed with UNAVAILABLE.
 */
export function startSnapshots(nc: NatsConnection, log: Logger): Snapshots {
  let tools: ReconnectingKvSnapshot<typeof ToolSchema> | undefined;
  let policy: PolicySnapshot | undefined;
  let stopped = false;
  loadWhenCreated({
    nc,
    bucket: buckets.registry.name,
    log,
    isStopped: () => stopped,
    meanwhile: "calls fail closed until the Registry creates it",
    start: async (kv) => {
      // Rebuilt after a NATS reconnect: a plain KV watch ends with the server.
      const snapshot = new ReconnectingKvSnapshot(
        nc,
        kv,
        buckets.registry.toolPrefix,
        ToolSchema,
        log,
      );
      await snapshot.start();
      tools = snapshot;
      log.info({ tools: snapshot.size }, "registry snapshot loaded");
    },
  });
  loadWhenCreated({
    nc,
    bucket: buckets.permission.name,
    log,
    isStopped: () => stopped,
    meanwhile: "calls fail closed until the Permission service creates it",
    start: async (kv) => {
      const snapshot = new PolicySnapshot(kv, log, nc);
      await snapshot.start();
      policy = snapshot;
      log.info("grant snapshot loaded");
    },
  });
  return {
    tools: {
      get isReady() {
        return tools?.isReady ?? false;
      },
      get: (key) => tools?.get(key),
      values: () => tools?.values() ?? [].values(),
    },
    policy: {
      get isReady() {
        return policy?.isReady ?? false;
      },
      decide: (subject, tool, now) => {
        if (!policy) throw new Error("grant snapshot not loaded");
        return policy.decide(subject, tool, now);
      },
    },
    stop() {
      stopped = true;
      tools?.stop();
      policy?.stop();
    },
  };
}
