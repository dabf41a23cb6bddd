import type { JsonObject } from "@bufbuild/protobuf";
import {
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Result,
  type Server,
  type ServerContext,
  type StandardSchemaV1,
} from "@modelcontextprotocol/server";
import type { DispatchResponse, Principal } from "@toolmesh/proto";
import type { PermissionGate } from "../../catalog/permission-gate.js";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import { approvalRequirements, confirmationRequirements } from "../../chain/checks.js";
import { CallerRefusal } from "../../runtimes/runtime.js";
import type { InputDesk } from "../inputs/input-desk.js";
import { type TaskDesk, TaskNotFound, type TaskView } from "../tasks/task-desk.js";
import { PushCaller, type PushedRequests } from "./mcp-push.js";

/** What 2025-11-25 tasks read: the tasks, and the questions their calls wait on. */
export interface McpTaskDeps {
  tasks: TaskDesk;
  inputs: InputDesk;
  pushed: PushedRequests;
  /** The longest tasks/result waits for a call to end (TOOLMESH_MAX_TIMEOUT_MS). */
  resultWaitMs: number;
}

/**
 * What /mcp declares at initialize (2025-11-25): tools/call may be task-augmented, and a
 * caller lists and cancels its own tasks.
 */
export const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** The `_meta` key of CreateTaskResult whose text a host may hand the model while it waits. */
const MODEL_IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response";
/** Tasks a tasks/list answers at most. */
const LIST_LIMIT = 100;

/** Whether a call of this tool by this caller waits for someone (an approver, or the caller). */
export function waitsForSomeone(
  deps: { catalog: ToolCatalog; policy: PermissionGate },
  principal: Principal,
  tool: { spec?: { requiresApproval: boolean; requiresConfirmation: boolean } } & Parameters<
    ToolCatalog["policyView"]
  >[0],
): boolean {
  if (!tool.spec) return false;
  const decision = deps.policy.decide(principal, deps.catalog.policyView(tool));
  return (
    approvalRequirements(tool.spec, decision).length > 0 ||
    confirmationRequirements(tool.spec, decision).length > 0
  );
}

/** A task as 2025-11-25 shows it: a call's end other than success or cancellation failed. */
export function taskOf(view: TaskView, retained: boolean): JsonObject {
  const status =
    view.status === "completed" && view.end?.error ? "failed" : (view.status as string);
  return {
    taskId: view.taskId,
    status,
    statusMessage: view.statusMessage,
    createdAt: new Date(view.createdMs).toISOString(),
    lastUpdatedAt: new Date(view.updatedMs).toISOString(),
    ttl: retained ? view.ttlMs : null,
    pollInterval: view.pollIntervalMs,
  };
}

/** The CreateTaskResult of a task-augmented tools/call. */
export function createdTask(view: TaskView): JsonObject {
  const task = { ...taskOf(view, true), status: view.end ? "working" : taskOf(view, true).status };
  return {
    task,
    _meta: { [MODEL_IMMEDIATE_RESPONSE]: view.statusMessage || "the call has started" },
  };
}

/** The params of tasks/get, tasks/result and tasks/cancel (both revisions' task methods). */
export const taskIdParams: StandardSchemaV1<unknown, { taskId: string }> = {
  "~standard": {
    version: 1,
    vendor: "toolmesh",
    validate: (value) => {
      const taskId = (value as { taskId?: unknown } | undefined)?.taskId;
      return typeof taskId === "string"
        ? { value: { taskId } }
        : { issues: [{ message: "taskId must be a string: the taskId tools/call answered" }] };
    },
  },
};
const listParams: StandardSchemaV1<unknown, { cursor?: string }> = {
  "~standard": { version: 1, vendor: "toolmesh", validate: (value) => ({ value: value ?? {} }) },
};

/**
 * Registers tasks/get, tasks/result, tasks/list and tasks/cancel on a server of one 2025-11-25
 * request. `toResult` turns a call's end into the CallToolResult tools/call would have answered.
 */
export function serveTasks(
  server: Server,
  deps: McpTaskDeps,
  caller: { principal: Principal; signal: AbortSignal },
  toResult: (tool: string, response: DispatchResponse) => JsonObject,
): void {
  const found = async (taskId: string) => {
    try {
      return await deps.tasks.get(taskId, caller.principal);
    } catch (error) {
      if (error instanceof TaskNotFound) throw taskNotFound(taskId);
      throw error;
    }
  };
  server.setRequestHandler("tasks/get", { params: taskIdParams }, async ({ taskId }) =>
    taskOf(await found(taskId), true),
  );
  server.setRequestHandler("tasks/list", { params: listParams }, async () => ({
    tasks: (await deps.tasks.list(caller.principal, LIST_LIMIT)).map((v) => taskOf(v, true)),
  }));
  server.setRequestHandler("tasks/cancel", { params: taskIdParams }, async ({ taskId }) => {
    await found(taskId);
    await deps.tasks.cancel(taskId, caller.principal);
    return taskOf(await found(taskId), true);
  });
  server.setRequestHandler("tasks/result", { params: taskIdParams }, async ({ taskId }, ctx) =>
    taskResult(deps, server, caller.principal, taskId, ctx, toResult),
  );
}

/**
 * tasks/result: the CallToolResult a direct tools/call would have answered, once the call ends.
 * It blocks until then (the spec's rule), at most until the HTTP request ends or `resultWaitMs`;
 * meanwhile a question the call asks is sent on this request's stream, and the answer delivered.
 */
async function taskResult(
  deps: McpTaskDeps,
  server: Server,
  principal: Principal,
  taskId: string,
  ctx: ServerContext,
  toResult: (tool: string, response: DispatchResponse) => JsonObject,
): Promise<Result> {
  const until = Date.now() + deps.resultWaitMs;
  const push = new PushCaller(deps.pushed, server, ctx.mcpReq.id, principal);
  for (;;) {
    const view = await deps.tasks.get(taskId, principal).catch((error: unknown) => {
      throw error instanceof TaskNotFound ? taskNotFound(taskId) : error;
    });
    if (view.end)
      return { ...toResult(view.tool, view.end), _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
    if (view.inputRequests) {
      const call = { callId: taskId, traceId: "", tool: view.tool, deadlineMs: until };
      for (const [key, request] of Object.entries(view.inputRequests)) {
        try {
          const answer = await push.ask(key, request, call);
          await deps.tasks.update(taskId, { [key]: answer }, principal);
        } catch (error) {
          if (!(error instanceof CallerRefusal)) throw error;
        }
      }
    }
    if (Date.now() >= until || ctx.mcpReq.signal.aborted)
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `task ${taskId} is still working after ${Math.round(deps.resultWaitMs / 1000)} s; call tasks/result again, or poll tasks/get`,
      );
    await pause(Math.min(view.pollIntervalMs, until - Date.now()), ctx.mcpReq.signal);
  }
}

/** Waits `ms`, or less when the request ends. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Another agent's (or user's) task answers exactly as an unknown one does, so a task id reveals
 * nothing of calls the caller did not make.
 */
export function taskNotFound(taskId: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `task not found: ${JSON.stringify(taskId.slice(0, 64))} is not a task of yours (the taskId of a CreateTaskResult from tools/call), or its records have expired`,
  );
}
