import { clone, create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { hasRole, type Principal, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { checkToolName, newTraceId } from "@toolmesh/names";
import {
  BuildRuntime,
  type Task,
  TaskLogKind,
  TaskSchema,
  type TaskSpec,
  TaskSpecSchema,
  TaskStatus,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import type { TaskStore } from "./task-store.js";

/** The bounds of a task spec's fields, in characters. */
export const specLimits = {
  description: 8000,
  inputs: 4000,
  outputs: 4000,
  check: 1000,
  checks: 20,
} as const;

const taskPages = pageTokens({
  defaultSize: 50,
  maxSize: 500,
  position: /^[0-9a-f]{32}$/,
  maxPositionLength: 32,
});

/** May `caller` see `task`: its own (same agent and user), or any for admins and services. */
export function mayRead(caller: Principal, task: Task): boolean {
  if (hasRole(caller, Role.Admin, Role.Service)) return true;
  return task.owner?.agentId === caller.agentId && task.owner?.userId === caller.userId;
}

/**
 * Files, finds and lists task specs for their owners: what SubmitTask, GetTask, ListTasks and the
 * ServiceAgent's `submit_task` and `check_task_status` share, so each rule is written once.
 */
export class TaskDesk {
  constructor(
    private readonly store: TaskStore,
    private readonly settings: { maxQueuedPerOwner: number },
  ) {}

  /** Checks a spec and files it PENDING for `owner`; resolves with the task and its place. */
  async submit(
    owner: Principal,
    spec: TaskSpec | undefined,
    chatId: string,
  ): Promise<{ task: Task; queuePosition: number }> {
    const checked = checkSpec(spec);
    const pending = this.store.all().filter((t) => t.status === TaskStatus.PENDING);
    const mine = pending.filter((t) => mayOwn(owner, t)).length;
    if (mine >= this.settings.maxQueuedPerOwner)
      throw new ConnectError(
        `you have ${mine} tasks queued, the most TOOLMESH_CODING_MAX_QUEUED allows; wait for one to start or check them with ListTasks`,
        Code.ResourceExhausted,
      );
    const now = timestampNow();
    const task = create(TaskSchema, {
      id: newTraceId(),
      spec: checked,
      status: TaskStatus.PENDING,
      owner: { agentId: owner.agentId, userId: owner.userId },
      chatId,
      traceId: newTraceId(),
      createdAt: now,
      log: [
        {
          time: now,
          kind: TaskLogKind.ROUTER,
          text: `queued by ${owner.agentId}${owner.userId ? ` for ${owner.userId}` : ""}`,
        },
      ],
    });
    try {
      await this.store.create(task);
    } catch (error) {
      throw new ConnectError(
        "the task could not be stored; try again",
        Code.Unavailable,
        undefined,
        undefined,
        error,
      );
    }
    return { task, queuePosition: pending.length };
  }

  /** One task with its log, if `caller` may see it; NOT_FOUND otherwise. */
  async get(caller: Principal, id: string): Promise<Task> {
    if (!/^[0-9a-f]{32}$/.test(id))
      throw invalidField("id", "is a task id: 32 lowercase hex characters");
    const task = await this.store.read(id);
    if (!task || !mayRead(caller, task))
      throw notFound("task", id, "ListTasks shows the tasks you may see");
    return task;
  }

  /** The tasks `caller` may see, newest first, one page of them (without logs). */
  list(
    caller: Principal,
    filter: { status: TaskStatus; pageSize: number; pageToken: string },
  ): { tasks: Task[]; nextPageToken: string } {
    if (!(filter.status in TaskStatus))
      throw invalidField("status", `${filter.status} is not a TaskStatus`);
    const size = taskPages.pageSize(filter.pageSize);
    const fingerprint = taskPages.fingerprint([filter.status]);
    const after = taskPages.decode(filter.pageToken, fingerprint);
    const all = this.visible(caller)
      .filter((t) => filter.status === TaskStatus.UNSPECIFIED || t.status === filter.status)
      .filter((t) => after === "" || t.id < after);
    const tasks = all.slice(0, size);
    const last = tasks.at(-1);
    return {
      tasks,
      nextPageToken: all.length > size && last ? taskPages.encode(last.id, fingerprint) : "",
    };
  }

  /** The tasks `caller` may see, newest first, without logs. */
  visible(caller: Principal): Task[] {
    return this.store
      .all()
      .filter((t) => mayRead(caller, t))
      .map((t) => clone(TaskSchema, t))
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }
}

function mayOwn(owner: Principal, task: Task): boolean {
  return task.owner?.agentId === owner.agentId && task.owner?.userId === owner.userId;
}

/** A spec within its bounds, with a valid tool name if it names one; INVALID_ARGUMENT otherwise. */
export function checkSpec(spec: TaskSpec | undefined): TaskSpec {
  if (!spec) throw invalidField("spec", "is required: at least a description of the tool");
  const checked = clone(TaskSpecSchema, spec);
  checked.description = checked.description.trim();
  if (checked.description === "")
    throw invalidField("spec.description", "is required: say what the tool must do");
  const bounded: [string, string, number][] = [
    ["spec.description", checked.description, specLimits.description],
    ["spec.inputs", checked.inputs, specLimits.inputs],
    ["spec.outputs", checked.outputs, specLimits.outputs],
  ];
  for (const [field, value, limit] of bounded)
    if (value.length > limit)
      throw invalidField(field, `is ${value.length} characters; at most ${limit} allowed`);
  if (checked.acceptanceChecks.length > specLimits.checks)
    throw invalidField(
      "spec.acceptance_checks",
      `has ${checked.acceptanceChecks.length} checks; at most ${specLimits.checks} allowed`,
    );
  checked.acceptanceChecks.forEach((check, i) => {
    if (check.length > specLimits.check)
      throw invalidField(
        `spec.acceptance_checks[${i}]`,
        `is ${check.length} characters; at most ${specLimits.check} allowed`,
      );
  });
  if (checked.toolName !== "") checkToolName("spec.tool_name", checked.toolName);
  if (!(checked.preferredRuntime in BuildRuntime))
    throw invalidField(
      "spec.preferred_runtime",
      `${checked.preferredRuntime} is not a BuildRuntime`,
    );
  return checked;
}
