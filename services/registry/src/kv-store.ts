import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { buckets, compareAndSet, openKv, ReconnectingKvSnapshot } from "@toolmesh/nats";
import { type Group, GroupSchema, type Tool, ToolSchema } from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";
import type { RegistryStore, ToolChange, Versioned } from "./store.js";

const TOOL_PREFIX = "tools.";

/**
 * The KV store: bucket `toolmesh-registry`, binary Protobuf values. The snapshots rebuild
 * themselves after a NATS reconnect (a KV watch does not survive a server restart).
 */
export class KvRegistryStore implements RegistryStore {
  private readonly toolSnapshot: ReconnectingKvSnapshot<typeof ToolSchema>;
  private readonly groupSnapshot: ReconnectingKvSnapshot<typeof GroupSchema>;
  private readonly seen = { tools: 0, groups: 0 };
  private readonly waiters = new Set<{
    kind: "tools" | "groups";
    met: () => boolean;
    done: () => void;
  }>();
  private readonly listeners = new Set<(change: ToolChange) => void>();

  private constructor(
    nc: NatsConnection,
    private readonly kv: KV,
    log: Logger,
  ) {
    this.toolSnapshot = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.registry.toolPrefix,
      ToolSchema,
      log,
    );
    this.groupSnapshot = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.registry.groupPrefix,
      GroupSchema,
      log,
    );
    this.toolSnapshot.onChange((change) => {
      this.advance("tools", change.revision);
      const name = change.key.slice(TOOL_PREFIX.length);
      for (const listener of this.listeners) listener({ name, tool: change.value });
    });
    this.groupSnapshot.onChange((change) => this.advance("groups", change.revision));
  }

  /** Creates the bucket when missing (idempotent) and loads the snapshots. */
  static async open(options: {
    nc: NatsConnection;
    replicas: number;
    history?: number;
    log: Logger;
  }): Promise<KvRegistryStore> {
    const kv = await openKv(options.nc.jetstream(), buckets.registry.name, {
      history: options.history ?? 5,
      replicas: options.replicas,
    });
    const store = new KvRegistryStore(options.nc, kv, options.log);
    await Promise.all([store.toolSnapshot.start(), store.groupSnapshot.start()]);
    return store;
  }

  private advance(kind: "tools" | "groups", revision: number): void {
    if (revision > this.seen[kind]) this.seen[kind] = revision;
    for (const waiter of this.waiters) {
      if (waiter.kind === kind && waiter.met()) {
        this.waiters.delete(waiter);
        waiter.done();
      }
    }
  }

  /** Resolves once the snapshot of `kind` has applied `revision`. */
  private applied(kind: "tools" | "groups", revision: number): Promise<number> {
    return this.until(kind, () => this.seen[kind] >= revision).then(() => revision);
  }

  /** Resolves once the snapshot of `kind` no longer holds a deleted key. */
  private removed(kind: "tools" | "groups", gone: () => boolean): Promise<number> {
    return this.until(kind, gone).then(() => this.seen[kind]);
  }

  /** Resolves when `met` holds after a change of `kind` (or after 2 s, as a backstop). */
  private until(kind: "tools" | "groups", met: () => boolean): Promise<void> {
    if (met()) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        kind,
        met,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve();
      }, 2000);
      this.waiters.add(waiter);
    });
  }

  ready(): boolean {
    return this.toolSnapshot.isReady && this.groupSnapshot.isReady;
  }

  tool(name: string): Tool | undefined {
    return this.toolSnapshot.get(buckets.registry.toolKey(name));
  }

  tools(): Iterable<Tool> {
    return this.toolSnapshot.values();
  }

  group(name: string): Group | undefined {
    return this.groupSnapshot.get(buckets.registry.groupKey(name));
  }

  groups(): Iterable<Group> {
    return this.groupSnapshot.values();
  }

  version(): number {
    return this.toolSnapshot.version + this.groupSnapshot.version;
  }

  async readTool(name: string): Promise<Versioned<Tool> | undefined> {
    const entry = await this.kv.get(buckets.registry.toolKey(name));
    if (entry?.operation !== "PUT") return undefined;
    return { value: fromBinary(ToolSchema, entry.value), revision: entry.revision };
  }

  async lastDeleted(name: string): Promise<Tool | undefined> {
    const key = buckets.registry.toolKey(name);
    // Most names are new: one get answers; the history is read only after a delete marker.
    const latest = await this.kv.get(key);
    if (!latest || latest.operation === "PUT") return undefined;
    const history = await this.kv.history({ key });
    let last: Tool | undefined;
    let deleted = false;
    for await (const entry of history) {
      if (entry.operation === "PUT") {
        last = fromBinary(ToolSchema, entry.value);
        deleted = false;
      } else deleted = true;
    }
    return deleted ? last : undefined;
  }

  async createTool(tool: Tool): Promise<number> {
    const key = buckets.registry.toolKey(tool.spec?.name ?? "");
    const revision = await compareAndSet(() => this.kv.create(key, toBinary(ToolSchema, tool)));
    return this.applied("tools", revision);
  }

  async updateTool(tool: Tool, revision: number): Promise<number> {
    const key = buckets.registry.toolKey(tool.spec?.name ?? "");
    const next = await compareAndSet(() =>
      this.kv.update(key, toBinary(ToolSchema, tool), revision),
    );
    return this.applied("tools", next);
  }

  async deleteTool(name: string, revision: number): Promise<number> {
    const key = buckets.registry.toolKey(name);
    await compareAndSet(async () => {
      await this.kv.delete(key, { previousSeq: revision });
      return 0;
    });
    return this.removed("tools", () => this.toolSnapshot.get(key) === undefined);
  }

  async readGroup(name: string): Promise<Versioned<Group> | undefined> {
    const entry = await this.kv.get(buckets.registry.groupKey(name));
    if (entry?.operation !== "PUT") return undefined;
    return { value: fromBinary(GroupSchema, entry.value), revision: entry.revision };
  }

  async createGroup(group: Group): Promise<number> {
    const key = buckets.registry.groupKey(group.name);
    const revision = await compareAndSet(() => this.kv.create(key, toBinary(GroupSchema, group)));
    return this.applied("groups", revision);
  }

  async updateGroup(group: Group, revision: number): Promise<number> {
    const key = buckets.registry.groupKey(group.name);
    const next = await compareAndSet(() =>
      this.kv.update(key, toBinary(GroupSchema, group), revision),
    );
    return this.applied("groups", next);
  }

  async deleteGroup(name: string, revision: number): Promise<number> {
    const key = buckets.registry.groupKey(name);
    await compareAndSet(async () => {
      await this.kv.delete(key, { previousSeq: revision });
      return 0;
    });
    return this.removed("groups", () => this.groupSnapshot.get(key) === undefined);
  }

  onToolChange(listener: (change: ToolChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.toolSnapshot.stop();
    this.groupSnapshot.stop();
  }
}
