import { bucketNames, kvKeyToken, openBucket } from "@toolmesh/nats";
import type { JetStreamManager, KV, NatsConnection } from "nats";

/** One MCP task of a caller: its call, and what it was. */
export interface IndexedTask {
  callId: string;
  tool: string;
  createdMs: number;
}

/** Who a task belongs to: the agent and the user it acts for. */
export interface TaskOwner {
  agentId: string;
  userId: string;
}

/**
 * Which calls are MCP tasks, by caller (tasks/list): only the ids — the state of each task is
 * read from its call's records. Kept as long as the calls' outcomes are.
 */
export interface TaskIndex {
  /** How long an entry is kept, in ms: the tasks' ttl. */
  readonly ttlMs: number;
  add(owner: TaskOwner, task: IndexedTask): Promise<void>;
  /** The caller's tasks, newest first, at most `limit`. */
  list(owner: TaskOwner, limit: number): Promise<IndexedTask[]>;
  /** The caller's task of that call, if it is one: one key read. */
  find(owner: TaskOwner, callId: string): Promise<IndexedTask | undefined>;
}

const keyOf = (owner: TaskOwner, callId: string) => `${prefixOf(owner)}.${kvKeyToken(callId)}`;
const prefixOf = (owner: TaskOwner) =>
  `tasks.${kvKeyToken(owner.agentId)}.${kvKeyToken(owner.userId || "-")}`;

/** The index in the Dispatchers' bucket `toolmesh-mcp-tasks`, shared by every replica. */
export class KvTaskIndex implements TaskIndex {
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  private constructor(
    private readonly kv: KV,
    readonly ttlMs: number,
  ) {}

  static async open(
    nc: NatsConnection,
    jsm: JetStreamManager,
    settings: { ttlMs: number; replicas: number; maxBytes: number },
  ): Promise<KvTaskIndex> {
    const kv = await openBucket(nc.jetstream(), jsm, bucketNames.mcpTasks, settings);
    return new KvTaskIndex(kv, settings.ttlMs);
  }

  async add(owner: TaskOwner, task: IndexedTask): Promise<void> {
    await this.kv.put(keyOf(owner, task.callId), this.encoder.encode(JSON.stringify(task)));
  }

  async list(owner: TaskOwner, limit: number): Promise<IndexedTask[]> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys(`${prefixOf(owner)}.>`)) keys.push(key);
    // Generated call ids begin with their time in milliseconds (newCallId), so the greatest keys
    // are the newest tasks: only `limit` of them are read, however many the caller has.
    const newest = keys.sort().reverse().slice(0, limit);
    const tasks: IndexedTask[] = [];
    for (const entry of await Promise.all(newest.map((key) => this.kv.get(key)))) {
      if (entry?.operation !== "PUT" || entry.value.length === 0) continue;
      tasks.push(JSON.parse(this.decoder.decode(entry.value)) as IndexedTask);
    }
    return tasks.sort((a, b) => b.createdMs - a.createdMs).slice(0, limit);
  }

  async find(owner: TaskOwner, callId: string): Promise<IndexedTask | undefined> {
    const entry = await this.kv.get(keyOf(owner, callId));
    if (entry?.operation !== "PUT" || entry.value.length === 0) return undefined;
    return JSON.parse(this.decoder.decode(entry.value)) as IndexedTask;
  }
}

/** The index in memory, for in-process tests. */
export class MemoryTaskIndex implements TaskIndex {
  readonly ttlMs = 7 * 24 * 60 * 60 * 1000;
  private readonly tasks = new Map<string, IndexedTask[]>();

  async add(owner: TaskOwner, task: IndexedTask): Promise<void> {
    const key = prefixOf(owner);
    this.tasks.set(key, [...(this.tasks.get(key) ?? []), task]);
  }

  async list(owner: TaskOwner, limit: number): Promise<IndexedTask[]> {
    return [...(this.tasks.get(prefixOf(owner)) ?? [])]
      .sort((a, b) => b.createdMs - a.createdMs)
      .slice(0, limit);
  }

  async find(owner: TaskOwner, callId: string): Promise<IndexedTask | undefined> {
    return this.tasks.get(prefixOf(owner))?.find((t) => t.callId === callId);
  }
}
