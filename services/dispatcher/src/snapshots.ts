import type { Logger } from "@toolmesh/log";
import { buckets, KvSnapshot } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import { ToolSchema } from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";
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
  let tools: KvSnapshot<typeof ToolSchema> | undefined;
  let policy: PolicySnapshot | undefined;
  let stopped = false;
  void loadWhenCreated(
    nc,
    buckets.registry.name,
    log,
    () => stopped,
    async (kv) => {
      const snapshot = new KvSnapshot(kv, buckets.registry.toolPrefix, ToolSchema, log);
      await snapshot.start();
      tools = snapshot;
      log.info({ tools: snapshot.size }, "registry snapshot loaded");
    },
  );
  void loadWhenCreated(
    nc,
    buckets.permission.name,
    log,
    () => stopped,
    async (kv) => {
      const snapshot = new PolicySnapshot(kv, log);
      await snapshot.start();
      policy = snapshot;
      log.info("grant snapshot loaded");
    },
  );
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

/** Binds to a bucket another service owns and starts a snapshot of it, retrying until both work. */
async function loadWhenCreated(
  nc: NatsConnection,
  bucket: string,
  log: Logger,
  stopped: () => boolean,
  start: (kv: KV) => Promise<void>,
): Promise<void> {
  const js = nc.jetstream();
  for (let attempt = 0; !stopped(); attempt++) {
    try {
      await start(await js.views.kv(bucket, { bindOnly: true }));
      return;
    } catch (error) {
      if (attempt % 20 === 0) {
        log.warn(
          { bucket, err: String(error) },
          "KV bucket not readable yet; calls fail closed until it is",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
