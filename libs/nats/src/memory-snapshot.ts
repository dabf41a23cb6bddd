import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { SnapshotView } from "./followed-bucket.js";
import type { SnapshotChange } from "./snapshot.js";

/**
 * A snapshot held in memory and written directly, standing in for a watched bucket where there
 * is no NATS: in-memory stores and in-process tests. Put and delete apply at once and notify
 * listeners the way a watch applies a PUT or a DEL.
 */
export class MemorySnapshot<Desc extends DescMessage> implements SnapshotView<Desc> {
  private readonly entries = new Map<string, MessageShape<Desc>>();
  private readonly listeners = new Set<(change: SnapshotChange<MessageShape<Desc>>) => void>();
  /** Ready from the start; a test sets it false to see readers fail closed. */
  isReady = true;
  /** Bumped on every put and delete, so derived caches know when to rebuild. */
  version = 0;

  /** `schema` is the message type held, as a watched snapshot of the same keys would decode. */
  constructor(readonly schema: Desc) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): MessageShape<Desc> | undefined {
    return this.entries.get(key);
  }

  values(): IterableIterator<MessageShape<Desc>> {
    return this.entries.values();
  }

  onChange(listener: (change: SnapshotChange<MessageShape<Desc>>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stores a value under a key (replacing any); readers see it on return. */
  put(key: string, value: MessageShape<Desc>): void {
    this.entries.set(key, value);
    this.changed(key, value);
  }

  /** Removes a key; false when there was none. */
  delete(key: string): boolean {
    if (!this.entries.delete(key)) return false;
    this.changed(key, undefined);
    return true;
  }

  /** Nothing to stop; present so the snapshot fits where a watched one is expected. */
  stop(): void {}

  private changed(key: string, value: MessageShape<Desc> | undefined): void {
    this.version++;
    const change = { key, value, revision: this.version };
    for (const listener of this.listeners) listener(change);
  }
}
