import type { Logger } from "@toolmesh/log";
import { buckets, openKv, retrySetup } from "@toolmesh/nats";
import type { KV, NatsConnection } from "nats";

/** How often an instance beats, and how long a silent one counts as alive. */
export interface HeartbeatSettings {
  intervalMs: number;
  replicas: number;
}

/**
 * This Dispatcher instance's heartbeat in the dispatchers bucket, which Audit's sweeper reads to
 * tell a live instance from a vanished one. Keys expire with the bucket's age limit, so the
 * bucket holds only instances seen lately, never a history.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    readonly kv: KV,
    readonly instance: string,
    private readonly log: Logger,
  ) {}

  /** Opens (or creates) the bucket and beats once before resolving. */
  static async start(
    nc: NatsConnection,
    instance: string,
    settings: HeartbeatSettings,
    log: Logger,
  ): Promise<Heartbeat> {
    const kv = await openKv(nc.jetstream(), buckets.dispatchers.name, {
      history: 1,
      // A key lives for a few missed beats; after that its instance is gone.
      ttl: Math.max(60_000, settings.intervalMs * 12),
      replicas: settings.replicas,
    });
    const heartbeat = new Heartbeat(kv, instance, log);
    // The bucket's stream may still be electing its leader on a cluster that has just started
    // (a refusal with no responders): that made the process exit before it was ready.
    await retrySetup(() => heartbeat.beat());
    heartbeat.timer = setInterval(() => {
      heartbeat.beat().catch((error: unknown) => {
        log.warn(
          { err: error },
          "could not write the heartbeat; other Dispatchers may sweep our calls",
        );
      });
    }, settings.intervalMs);
    heartbeat.timer.unref();
    return heartbeat;
  }

  private async beat(): Promise<void> {
    await this.kv.put(
      buckets.dispatchers.instanceKey(this.instance),
      buckets.dispatchers.beat(Date.now()),
    );
  }

  /** Stops beating and removes the key: a clean stop has recorded all of its calls. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.kv.delete(buckets.dispatchers.instanceKey(this.instance)).catch((error: unknown) => {
      this.log.warn({ err: error }, "could not remove the heartbeat");
    });
  }
}
