import { clone, create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { bucketNames, compareAndSet, KvConflictError, type KvSnapshot } from "@toolmesh/nats";
import {
  type Task,
  type TaskLogEntry,
  TaskLogEntrySchema,
  TaskLogSchema,
  TaskSchema,
} from "@toolmesh/proto";
import type { KV } from "nats";
import { type BucketOptions, openFollowedBucket } from "../bucket.js";

/** How many times a read-change-write is tried when another writer got there first. */
const CAS_ATTEMPTS = 10;

/**
 * Task specs and their builds in the bucket `toolmesh-agent-tasks`: `tasks.<id>` holds a Task
 * without its log, `logs.<id>` the log (a TaskLog), so the tasks every replica keeps in memory
 * stay small while a log grows. Keys expire TOOLMESH_TASK_TTL_DAYS after their last write; every
 * change is a compare-and-set, so two writers never lose each other's change.
 */
export class TaskStore {
  private constructor(
    private readonly kv: KV,
    private readonly snapshot: KvSnapshot<typeof TaskSchema>,
    private readonly logLimit: number,
  ) {}

  static async open(options: BucketOptions & { logLimit: number }): Promise<TaskStore> {
    const { kv, snapshot } = await openFollowedBucket(
      options,
      bucketNames.agentTasks,
      "tasks.>",
      TaskSchema,
    );
    return new TaskStore(kv, snapshot, options.logLimit);
  }

  /** Every task (without logs), in no order. */
  all(): Task[] {
    return [...this.snapshot.values()];
  }

  get(id: string): Task | undefined {
    return this.snapshot.get(`tasks.${id}`);
  }

  /** The task with its log, read from the bucket (not the snapshot). */
  async read(id: string): Promise<Task | undefined> {
    const entry = await this.kv.get(`tasks.${id}`);
    if (entry?.operation !== "PUT") return undefined;
    const task = fromBinary(TaskSchema, entry.value);
    const log = await this.kv.get(`logs.${id}`);
    if (log?.operation === "PUT") task.log = fromBinary(TaskLogSchema, log.value).entries;
    return task;
  }

  /** Stores a new task; its log starts with `task.log`. */
  async create(task: Task): Promise<void> {
    const stored = clone(TaskSchema, task);
    stored.log = [];
    await this.kv.create(`tasks.${task.id}`, toBinary(TaskSchema, stored));
    if (task.log.length > 0) await this.append(task.id, task.log);
    await this.settle(task.id, (t) => t !== undefined);
  }

  /**
   * Applies `change` to the stored task (compare-and-set, read again on a conflict); `change`
   * returns undefined to leave it as it is. Resolves with the task as stored, undefined when
   * there is none.
   */
  async update(id: string, change: (task: Task) => Task | undefined): Promise<Task | undefined> {
    for (let attempt = 1; ; attempt++) {
      const entry = await this.kv.get(`tasks.${id}`);
      if (entry?.operation !== "PUT") return undefined;
      const current = fromBinary(TaskSchema, entry.value);
      const next = change(clone(TaskSchema, current));
      if (!next) return current;
      next.log = [];
      try {
        await compareAndSet(() =>
          this.kv.update(`tasks.${id}`, toBinary(TaskSchema, next), entry.revision),
        );
        await this.settle(id, (t) => t?.status === next.status);
        return next;
      } catch (error) {
        if (!(error instanceof KvConflictError) || attempt >= CAS_ATTEMPTS) throw error;
      }
    }
  }

  /** Adds entries to a task's log, keeping its last TOOLMESH_TASK_LOG_ENTRIES. */
  async append(id: string, entries: TaskLogEntry[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const entry = await this.kv.get(`logs.${id}`);
      const stored =
        entry?.operation === "PUT" ? fromBinary(TaskLogSchema, entry.value) : undefined;
      const all = [...(stored?.entries ?? []), ...entries.map((e) => clone(TaskLogEntrySchema, e))];
      const value = toBinary(
        TaskLogSchema,
        create(TaskLogSchema, { entries: all.slice(-this.logLimit) }),
      );
      try {
        await compareAndSet(() =>
          entry?.operation === "PUT"
            ? this.kv.update(`logs.${id}`, value, entry.revision)
            : this.kv.create(`logs.${id}`, value),
        );
        return;
      } catch (error) {
        if (!(error instanceof KvConflictError) || attempt >= CAS_ATTEMPTS) throw error;
      }
    }
  }

  /** Calls `listener` after every change of a task. */
  onChange(listener: (task: Task | undefined) => void): () => void {
    return this.snapshot.onChange((change) => listener(change.value));
  }

  stop(): void {
    this.snapshot.stop();
  }

  /** Waits (briefly) until this process's snapshot shows a write, so reads right after see it. */
  private async settle(id: string, done: (task: Task | undefined) => boolean): Promise<void> {
    if (done(this.get(id))) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, 2000);
      const stop = this.snapshot.onChange((change) => {
        if (change.key === `tasks.${id}` && done(change.value)) finish();
      });
      function finish() {
        clearTimeout(timer);
        stop();
        resolve();
      }
    });
  }
}
