import type { Logger } from "@toolmesh/log";
import type { KV, NatsConnection } from "nats";
import { openKv } from "./buckets.js";
import { bucketNames } from "./bus-access.js";
import { compareAndSet, KvConflictError } from "./jetstream-errors.js";

/** How long a lease lives without renewal: a holder that vanished is replaced after this. */
export const LEASE_TTL_MS = 6_000;

/**
 * What the holder runs while it holds the lease; the function it returns stops that work. Work
 * that acts on its own (a consumer's handler) checks `lease.held` before each act.
 */
export type LeasedWork = (lease: { readonly held: boolean }) => Promise<() => Promise<void>>;

/** One process's claim on a lease: it runs the work only while it holds it. */
export interface Lease {
  /** True while this process holds the lease and renewed it within its TTL. */
  readonly held: boolean;
  /** Stops the work (if running), gives the lease up so a standby takes over at once, and stops. */
  stop(): Promise<void>;
}

/**
 * Runs `work` in exactly one process of a service at a time, with takeover: the replicas of a
 * service race to create the key `<service>` in the bucket `toolmesh-leases`, whose age limit is
 * the lease's TTL; the winner renews it (compare-and-set on its revision) every third of the TTL,
 * and the others try again as often. A holder that dies stops renewing, the key expires on the
 * server (no clocks compared across machines), and a standby takes over within TTL plus one try.
 * A holder that cannot renew for a whole TTL (NATS unreachable) or finds the key taken stops its
 * work before another can have started, as far as its own clock tells. Renewal goes on while the
 * work starts, however long that takes.
 */
export async function holdLease(options: {
  nc: NatsConnection;
  /** The service whose work this is, the lease's key; nats-server lets only it write that key. */
  service: string;
  /** This process, as the key's value names its holder. */
  instance: string;
  replicas: number;
  work: LeasedWork;
  log: Logger;
}): Promise<Lease> {
  const { nc, service, instance, log } = options;
  // One TTL for every service: the bucket is shared, and its first creator sets it.
  const ttlMs = LEASE_TTL_MS;
  const everyMs = Math.max(100, Math.floor(ttlMs / 3));
  const kv: KV = await openKv(nc.jetstream(), bucketNames.leases, {
    history: 1,
    ttl: ttlMs,
    replicas: options.replicas,
    max_bytes: 1024 * 1024,
  });
  let revision = 0;
  /** When the last successful write was sent: the lease is ours until then + TTL at the latest. */
  let renewedAt = 0;
  let owned = false;
  let stopped = false;
  /** The work, once started: resolves with what stops it. */
  let running: Promise<(() => Promise<void>) | undefined> | undefined;
  let wake: () => void = () => {};

  const held = () => owned && !stopped && Date.now() - renewedAt < ttlMs;
  const handle = {
    get held() {
      return held();
    },
  };

  /** Takes a free lease, or our own back after NATS was away; false while another holds it. */
  const acquire = async (): Promise<boolean> => {
    const sentAt = Date.now();
    try {
      revision = await compareAndSet(() => kv.create(service, instance));
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      const entry = await kv.get(service);
      if (entry?.operation !== "PUT" || entry.string() !== instance) return false;
      revision = await compareAndSet(() => kv.update(service, instance, entry.revision));
    }
    renewedAt = sentAt;
    return true;
  };

  const stopWork = async (why: string | undefined) => {
    const work = running;
    running = undefined;
    if (!work) return;
    if (why) log.warn({ lease: service, instance }, `lease lost (${why}); stopping its work`);
    const stop = await work;
    await stop?.().catch((error: unknown) =>
      log.error({ err: error }, "stopping leased work failed"),
    );
  };

  const startWork = () => {
    log.info({ lease: service, instance }, "lease taken; this process is the active one");
    running = options.work(handle).catch((error: unknown) => {
      // Not started: give the lease back to the loop, which starts the work again while it holds.
      log.warn({ err: error, lease: service }, "leased work did not start; trying again");
      running = undefined;
      return undefined;
    });
    return running;
  };

  const tick = async () => {
    if (!owned) {
      owned = await acquire();
      if (owned && !running) void startWork();
      return;
    }
    const sentAt = Date.now();
    try {
      revision = await compareAndSet(() => kv.update(service, instance, revision));
      renewedAt = sentAt;
      // Work that failed to start is started again while the lease is ours.
      if (!running) void startWork();
    } catch (error) {
      if (error instanceof KvConflictError) {
        owned = false;
        await stopWork("another process holds it");
      }
    }
  };

  const attempt = () =>
    tick().catch((error: unknown) => {
      log.debug({ err: error, lease: service }, "lease attempt failed; trying again");
    });
  await attempt();
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, everyMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopped) break;
      // Renewal does not wait for the work to start: a slow start must not cost the lease.
      await attempt();
      if (owned && Date.now() - renewedAt >= ttlMs) {
        owned = false;
        await stopWork(`not renewed for ${ttlMs} ms`);
      }
    }
  })();
  // A lone replica is active (its work started) once this resolves, as a process without a
  // lease would be.
  if (running) await running;

  return {
    get held() {
      return held();
    },
    async stop() {
      stopped = true;
      wake();
      await loop;
      const wasOwner = owned;
      owned = false;
      await stopWork(undefined);
      if (wasOwner) {
        // Deleting only our own revision: a standby may take over now instead of after the TTL.
        await compareAndSet(() => kv.delete(service, { previousSeq: revision })).catch(
          () => undefined,
        );
      }
    },
  };
}
