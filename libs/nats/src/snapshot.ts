import { type DescMessage, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import type { KV, KvEntry, QueuedIterator } from "nats";
import { retrySetup } from "./jetstream-errors.js";

/** A change seen by a snapshot; value is undefined for a delete or purge. */
export interface SnapshotChange<T> {
  key: string;
  value: T | undefined;
  revision: number;
}

/**
 * A read-only, in-memory copy of the keys of a KV bucket under one prefix, kept current by a
 * watch. Reads are map look-ups; `ready` resolves once the initial values are loaded.
 */
export class KvSnapshot<Desc extends DescMessage> {
  private readonly entries = new Map<string, MessageShape<Desc>>();
  private readonly listeners = new Set<(change: SnapshotChange<MessageShape<Desc>>) => void>();
  private watcher: QueuedIterator<KvEntry> | undefined;
  private loaded = false;
  /** Bumped on every applied change, so derived caches know when to rebuild. */
  version = 0;
  readonly ready: Promise<void>;
  private markReady!: () => void;

  constructor(
    private readonly kv: KV,
    private readonly prefix: string,
    private readonly schema: Desc,
    private readonly log: Logger,
  ) {
    this.ready = new Promise((resolve) => {
      this.markReady = resolve;
    });
  }

  /** Starts watching; resolves when the initial values are loaded. */
  async start(): Promise<void> {
    // The watch is a consumer of the bucket's stream, which may still be electing its leader on
    // a cluster that has just started.
    this.watcher = await retrySetup(() =>
      this.kv.watch({
        key: this.prefix,
        initializedFn: () => {
          this.loaded = true;
          this.markReady();
        },
      }),
    );
    void this.consume(this.watcher);
    await this.ready;
  }

  private async consume(watcher: QueuedIterator<KvEntry>): Promise<void> {
    for await (const entry of watcher) {
      const deleted = entry.operation === "DEL" || entry.operation === "PURGE";
      let value: MessageShape<Desc> | undefined;
      if (!deleted) {
        try {
          value = fromBinary(this.schema, entry.value);
        } catch (error) {
          this.log.error(
            { err: error, key: entry.key },
            "undecodable value in KV snapshot; ignored",
          );
          continue;
        }
      }
      if (value === undefined) this.entries.delete(entry.key);
      else this.entries.set(entry.key, value);
      this.version++;
      const change = { key: entry.key, value, revision: entry.revision };
      for (const listener of this.listeners) listener(change);
    }
  }

  /** True once the initial values are loaded; a caller with no snapshot must fail closed. */
  get isReady(): boolean {
    return this.loaded;
  }

  get(key: string): MessageShape<Desc> | undefined {
    return this.entries.get(key);
  }

  values(): IterableIterator<MessageShape<Desc>> {
    return this.entries.values();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Calls the listener on every change after this point; returns an unsubscribe function. */
  onChange(listener: (change: SnapshotChange<MessageShape<Desc>>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.watcher?.stop();
  }
}
