import type { Logger } from "@toolmesh/log";
import type { KV, NatsConnection } from "nats";

/** What loadWhenCreated reports. */
export interface BucketLoad {
  /** Whether the first try loaded the bucket (false: it did not exist yet; retrying). */
  firstAttempt: Promise<boolean>;
  /** Resolves once `start` succeeded, or never if stopped first. */
  loaded: Promise<void>;
}

/**
 * Binds to a KV bucket another service owns and runs `start` on it (typically: load a snapshot),
 * retrying every retryMs until the owner has created the bucket and `start` succeeds. Until
 * then the caller must fail closed. The first try runs at once, so a caller may await it.
 */
export function loadWhenCreated(options: {
  nc: NatsConnection;
  bucket: string;
  log: Logger;
  start: (kv: KV) => Promise<void>;
  isStopped: () => boolean;
  /** Said once when the bucket is missing: what fails closed meanwhile. */
  meanwhile: string;
  /** Logged once `start` succeeded. */
  readyMessage?: string;
  retryMs?: number;
  /** Told after each look whether the bucket exists. */
  onLook?: (exists: boolean) => void;
}): BucketLoad {
  const { nc, bucket, log, start, isStopped } = options;
  const retryMs = options.retryMs ?? 500;
  const attempt = async (): Promise<boolean> => {
    try {
      await (await nc.jetstreamManager()).streams.info(`KV_${bucket}`);
    } catch {
      options.onLook?.(false);
      return false;
    }
    options.onLook?.(true);
    await start(await nc.jetstream().views.kv(bucket, { bindOnly: true }));
    return true;
  };
  const firstAttempt = attempt();
  const loaded = (async () => {
    let ok = await firstAttempt.catch((error: unknown) => {
      log.warn({ bucket, err: error }, `cannot load bucket yet; ${options.meanwhile}`);
      return false;
    });
    if (!ok) log.warn({ bucket }, `bucket not found yet; ${options.meanwhile}`);
    for (let tries = 1; !ok && !isStopped(); tries++) {
      await new Promise((resolve) => setTimeout(resolve, retryMs).unref());
      if (isStopped()) return;
      ok = await attempt().catch((error: unknown) => {
        if (tries % 20 === 0) log.warn({ bucket, err: error }, "cannot load bucket yet; retrying");
        return false;
      });
    }
    if (ok) log.info({ bucket }, options.readyMessage ?? "bucket loaded");
  })();
  return { firstAttempt: firstAttempt.catch(() => false), loaded };
}
