import { type DescMessage, equals, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import type { KV, NatsConnection } from "nats";
import { KvSnapshot, type SnapshotChange } from "./snapshot.js";

const RETRY_MS = 250;

/**
 * A KvSnapshot that rebuilds itself after every NATS reconnect: a KV watch does not survive a
 * server restart (its consumer is gone), and a snapshot that silently stops would keep a
 * revoked key or grant alive. The old copy keeps answering until the new one is loaded; then
 * listeners hear every difference, deletes included. Same read API as KvSnapshot.
 */
export class ReconnectingKvSnapshot<Desc extends DescMessage> {
  private current: KvSnapshot<Desc>;
  /** The keys of each snapshot, followed through its changes (KvSnapshot lists values only). */
  private readonly keys = new WeakMap<KvSnapshot<Desc>, Set<string>>();
  private readonly listeners = new Set<(change: SnapshotChange<MessageShape<Desc>>) => void>();
  private unsubscribe: () => void = () => {};
  private versionBase = 0;
  private stopped = false;
  private resyncing: Promise<void> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly prefix: string,
    private readonly schema: Desc,
    private readonly log: Logger,
  ) {
    this.current = this.attach(this.create());
  }

  private create(): KvSnapshot<Desc> {
    const snapshot = new KvSnapshot(this.kv, this.prefix, this.schema, this.log);
    const keys = new Set<string>();
    snapshot.onChange((change) => {
      if (change.value === undefined) keys.delete(change.key);
      else keys.add(change.key);
    });
    this.keys.set(snapshot, keys);
    return snapshot;
  }

  /** Starts watching and following reconnects; resolves when the initial values are loaded. */
  async start(): Promise<void> {
    await this.current.start();
    void (async () => {
      for await (const status of this.nc.status()) {
        if (this.stopped) return;
        if (status.type === "reconnect") {
          this.resyncing ??= this.resync().finally(() => {
            this.resyncing = undefined;
          });
        }
      }
    })();
  }

  private attach(snapshot: KvSnapshot<Desc>): KvSnapshot<Desc> {
    this.unsubscribe();
    this.unsubscribe = snapshot.onChange((change) => this.emit(change));
    return snapshot;
  }

  private emit(change: SnapshotChange<MessageShape<Desc>>): void {
    for (const listener of this.listeners) listener(change);
  }

  private async resync(): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt++) {
      const next = this.create();
      try {
        await next.start();
      } catch (error) {
        next.stop();
        this.log.warn(
          { err: error, attempt, prefix: this.prefix },
          "cannot rebuild KV snapshot yet",
        );
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS * Math.min(attempt, 8)));
        continue;
      }
      if (this.stopped) {
        next.stop();
        return;
      }
      const previous = this.current;
      this.versionBase += previous.version + 1;
      this.current = this.attach(next);
      previous.stop();
      let changed = 0;
      for (const key of this.keys.get(next) ?? []) {
        const value = next.get(key);
        const old = previous.get(key);
        if (value && (!old || !equals(this.schema, old, value))) {
          changed++;
          this.emit({ key, value, revision: 0 });
        }
      }
      for (const key of this.keys.get(previous) ?? []) {
        if (next.get(key) === undefined) {
          changed++;
          this.emit({ key, value: undefined, revision: 0 });
        }
      }
      this.log.info(
        { prefix: this.prefix, entries: next.size, changed },
        "KV snapshot rebuilt after reconnect",
      );
      return;
    }
  }

  /** True once the initial values are loaded; a caller with no snapshot must fail closed. */
  get isReady(): boolean {
    return this.current.isReady;
  }

  /** Bumped on every applied change and on every rebuild, so derived caches know to rebuild. */
  get version(): number {
    return this.versionBase + this.current.version;
  }

  get(key: string): MessageShape<Desc> | undefined {
    return this.current.get(key);
  }

  values(): IterableIterator<MessageShape<Desc>> {
    return this.current.values();
  }

  get size(): number {
    return this.current.size;
  }

  /** Calls the listener on every change after this point; returns an unsubscribe function. */
  onChange(listener: (change: SnapshotChange<MessageShape<Desc>>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    this.current.stop();
  }
}
