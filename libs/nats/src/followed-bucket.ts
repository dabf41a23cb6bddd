import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { ToolSchema } from "@toolmesh/proto";
import type { NatsConnection } from "nats";
import { loadWhenCreated } from "./bucket-wait.js";
import { buckets } from "./buckets.js";
import { ReconnectingKvSnapshot } from "./reconnecting-snapshot.js";
import type { SnapshotChange } from "./snapshot.js";

/** The read side of a snapshot, whichever way it was loaded. */
export interface SnapshotView<Desc extends DescMessage> {
  readonly isReady: boolean;
  /** Bumped on every applied change, so derived caches know when to rebuild. */
  readonly version: number;
  readonly size: number;
  get(key: string): MessageShape<Desc> | undefined;
  values(): IterableIterator<MessageShape<Desc>>;
  onChange(listener: (change: SnapshotChange<MessageShape<Desc>>) => void): () => void;
}

/**
 * A read-only snapshot of keys under a prefix of a bucket another service owns. Until the owner
 * has created the bucket and the snapshot has loaded it reports not ready, and every caller
 * must fail closed; once loaded it follows changes and NATS reconnects.
 */
export class FollowedBucket<Desc extends DescMessage> implements SnapshotView<Desc> {
  private snapshot: ReconnectingKvSnapshot<Desc> | undefined;
  private readonly listeners = new Set<(change: SnapshotChange<MessageShape<Desc>>) => void>();
  private stopped = false;
  private missing = false;
  /** Whether the bucket existed at the first try (then it is loaded when this resolves). */
  readonly firstAttempt: Promise<boolean>;
  /** Resolves once loaded (never, if stopped first). */
  readonly loaded: Promise<void>;

  constructor(options: {
    nc: NatsConnection;
    bucket: string;
    prefix: string;
    schema: Desc;
    log: Logger;
    /** Said once when the bucket is missing: what fails closed meanwhile. */
    meanwhile: string;
    readyMessage?: string;
    retryMs?: number;
  }) {
    const { nc, prefix, schema, log } = options;
    const load = loadWhenCreated({
      nc,
      bucket: options.bucket,
      log,
      isStopped: () => this.stopped,
      meanwhile: options.meanwhile,
      ...(options.readyMessage ? { readyMessage: options.readyMessage } : {}),
      ...(options.retryMs ? { retryMs: options.retryMs } : {}),
      onLook: (exists) => {
        this.missing = !exists;
      },
      start: async (kv) => {
        const next = new ReconnectingKvSnapshot(nc, kv, prefix, schema, log);
        await next.start();
        if (this.stopped) {
          next.stop();
          return;
        }
        next.onChange((change) => {
          for (const listener of this.listeners) listener(change);
        });
        this.snapshot = next;
      },
    });
    this.firstAttempt = load.firstAttempt;
    this.loaded = load.loaded;
  }

  get isReady(): boolean {
    return this.snapshot?.isReady ?? false;
  }

  /**
   * True while the owner has not created the bucket yet: a reader may treat that as "nothing
   * stored" (no grants) rather than "still loading".
   */
  get bucketMissing(): boolean {
    return this.missing && this.snapshot === undefined;
  }

  get version(): number {
    return this.snapshot?.version ?? 0;
  }

  get size(): number {
    return this.snapshot?.size ?? 0;
  }

  get(key: string): MessageShape<Desc> | undefined {
    return this.snapshot?.get(key);
  }

  values(): IterableIterator<MessageShape<Desc>> {
    return this.snapshot?.values() ?? new Map<string, MessageShape<Desc>>().values();
  }

  /** Calls the listener on every change applied after the snapshot loaded. */
  onChange(listener: (change: SnapshotChange<MessageShape<Desc>>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.stopped = true;
    this.snapshot?.stop();
  }
}

/** The Registry's tools, followed by a service that reads them (Dispatcher, Permission …). */
export function followRegistryTools(
  nc: NatsConnection,
  log: Logger,
  meanwhile: string,
): FollowedBucket<typeof ToolSchema> {
  return new FollowedBucket({
    nc,
    bucket: buckets.registry.name,
    prefix: buckets.registry.toolPrefix,
    schema: ToolSchema,
    log,
    meanwhile,
    readyMessage: "registry snapshot loaded",
  });
}
