import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import {
  type CallError,
  CallErrorSchema,
  type Task,
  TaskLogEntrySchema,
  TaskLogKind,
  TaskStatus,
} from "@toolmesh/proto";
import type { TaskStore } from "./task-store.js";

/** How a build ended. */
export interface TaskResult {
  /** The tool registered (disabled); set when the task succeeded. */
  toolName?: string;
  error?: CallError;
  steps: number;
  tokens: number;
}

/** Builds one task; resolves (never rejects) with how it ended. */
export type TaskRunner = (task: Task, signal: AbortSignal) => Promise<TaskResult>;

/**
 * The Router: hands PENDING tasks, oldest first, to the CodingAgent, at most `concurrency` at a
 * time, and writes how each ended. It runs in one replica at a time (the tool agent's lease), so
 * the limit holds for the whole stack. A task found RUNNING under another process when it starts
 * is FAILED `agent_lost`, not queued again: its sandbox and its model conversation are gone, and
 * steps a model already took (a registration, say) must not run twice unseen; its owner submits
 * it again.
 */
export class Router {
  private readonly running = new Map<string, AbortController>();
  private readonly finished = new Set<Promise<void>>();
  private stopChanges: (() => void) | undefined;
  private stopped = false;
  private pumping = false;
  private again = false;

  constructor(
    private readonly deps: {
      store: TaskStore;
      /** Undefined without a model: tasks stay PENDING until one is configured. */
      run: TaskRunner | undefined;
      concurrency: number;
      /** This process, as RUNNING tasks name their runner. */
      instance: string;
      log: Logger;
    },
  ) {}

  /** Fails the tasks a lost process was running, then starts what may run. */
  async start(): Promise<void> {
    const { store, instance } = this.deps;
    for (const task of store.all()) {
      if (task.status !== TaskStatus.RUNNING || task.runner === instance) continue;
      await this.finish(task.id, {
        steps: task.steps,
        tokens: Number(task.tokens),
        error: create(CallErrorSchema, {
          code: "agent_lost",
          message: `the tool agent building it (${task.runner || "unknown"}) stopped before it ended; submit the task again`,
        }),
      });
    }
    this.stopChanges = store.onChange(() => void this.pump());
    await this.pump();
  }

  /** Stops every build (each ends FAILED `agent_stopped`) and waits for them to be written. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopChanges?.();
    for (const controller of this.running.values()) controller.abort();
    await Promise.all(this.finished);
  }

  /** Starts pending tasks while there is room; one pass at a time, repeated when asked meanwhile. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        await this.fill();
      } while (this.again);
    } catch (error) {
      this.deps.log.error(
        { err: error },
        "the Router could not start a task; it tries at the next change",
      );
    } finally {
      this.pumping = false;
    }
  }

  private async fill(): Promise<void> {
    const { store, run, concurrency, instance, log } = this.deps;
    if (!run) return;
    while (!this.stopped && this.running.size < concurrency) {
      const next = store
        .all()
        .filter((t) => t.status === TaskStatus.PENDING && !this.running.has(t.id))
        .sort((a, b) => (a.id < b.id ? -1 : 1))[0];
      if (!next) return;
      const claimed = await store.update(next.id, (t) => {
        if (t.status !== TaskStatus.PENDING) return undefined;
        t.status = TaskStatus.RUNNING;
        t.runner = instance;
        t.startedAt = timestampNow();
        return t;
      });
      if (claimed?.status !== TaskStatus.RUNNING || claimed.runner !== instance) continue;
      const controller = new AbortController();
      this.running.set(claimed.id, controller);
      log.info({ task_id: claimed.id, trace_id: claimed.traceId }, "task started");
      await store.append(claimed.id, [
        create(TaskLogEntrySchema, {
          time: timestampNow(),
          kind: TaskLogKind.ROUTER,
          text: `started (trace ${claimed.traceId})`,
        }),
      ]);
      const done = run(claimed, controller.signal)
        .catch(
          (error: unknown): TaskResult => ({
            steps: 0,
            tokens: 0,
            error: create(CallErrorSchema, { code: "internal", message: String(error) }),
          }),
        )
        .then((result) => this.finish(claimed.id, result))
        .catch((error: unknown) =>
          log.error({ err: error, task_id: claimed.id }, "the end of a task could not be written"),
        )
        .finally(() => {
          this.running.delete(claimed.id);
          this.finished.delete(done);
          if (!this.stopped) void this.pump();
        });
      this.finished.add(done);
    }
  }

  /**
   * Writes a task's end: SUCCEEDED with its tool, or FAILED with why. The log's last line is
   * written first, so a task whose status is final has its whole log.
   */
  private async finish(id: string, result: TaskResult): Promise<void> {
    const { store, log } = this.deps;
    const ok = result.toolName !== undefined;
    const text = ok
      ? `succeeded: registered ${result.toolName} (disabled until an operator enables it)`
      : `failed: ${result.error?.code}: ${result.error?.message}`;
    await store.append(id, [
      create(TaskLogEntrySchema, { time: timestampNow(), kind: TaskLogKind.ROUTER, text }),
    ]);
    const ended = await store.update(id, (t) => {
      if (t.status === TaskStatus.SUCCEEDED || t.status === TaskStatus.FAILED) return undefined;
      t.status = ok ? TaskStatus.SUCCEEDED : TaskStatus.FAILED;
      t.finishedAt = timestampNow();
      t.steps = result.steps;
      t.tokens = BigInt(result.tokens);
      t.runner = "";
      if (ok) t.toolName = result.toolName ?? "";
      else if (result.error) t.error = result.error;
      return t;
    });
    log.info(
      {
        task_id: id,
        trace_id: ended?.traceId,
        status: ok ? "succeeded" : "failed",
        code: result.error?.code,
      },
      "task ended",
    );
  }
}
