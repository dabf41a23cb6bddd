import type { JsonObject } from "@bufbuild/protobuf";
import {
  type JSONRPCRequest,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
  type StandardSchemaV1,
} from "@modelcontextprotocol/server";
import { ConnectError } from "@toolmesh/errors";
import type { DispatchResponse, Principal } from "@toolmesh/proto";
import { type TaskDesk, TaskNotFound, type TaskView } from "../tasks/task-desk.js";
import { taskIdParams, taskNotFound } from "./mcp-tasks.js";

/** The 2026-07-28 Tasks extension (SEP-2663). */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
const CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities";

/**
 * A Server whose tools/call may answer a task (the 2025-11-25 CreateTaskResult, or the
 * extension's flat one with `resultType: "task"`): the SDK checks a tools/call result against
 * CallToolResult, which a task is not, so a task skips only that check.
 */
export class TaskingServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== "tools/call") return super._wrapHandler(method, handler);
    const checked = (result: Result) => super._wrapHandler(method, async () => result);
    return async (request, ctx) => {
      const result = await handler(request, ctx);
      return isTask(result) ? result : checked(result)(request, ctx);
    };
  }
}

function isTask(result: Result): boolean {
  const task = (result as { task?: unknown }).task;
  return (
    (result as { resultType?: unknown }).resultType === "task" ||
    (task !== null && typeof task === "object" && "taskId" in task)
  );
}

/** Whether this 2026-07-28 request's client takes tasks (declared the extension). */
export function takesTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as JsonObject | undefined;
  const capabilities = envelope?.[CAPABILITIES_META] as JsonObject | undefined;
  const extensions = capabilities?.extensions as JsonObject | undefined;
  return extensions?.[TASKS_EXTENSION] !== undefined;
}

/** The -32021 of a request that needs the extension its client did not declare. */
export function tasksRequired(what: string): ProtocolError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } as never,
    `${what} needs the ${TASKS_EXTENSION} extension: declare it in the request's clientCapabilities`,
  );
}

/** A task on the extension's wire: integer milliseconds, no requestState. */
function taskJson(view: TaskView): JsonObject {
  return {
    taskId: view.taskId,
    status: view.status,
    statusMessage: view.statusMessage,
    createdAt: new Date(view.createdMs).toISOString(),
    lastUpdatedAt: new Date(view.updatedMs).toISOString(),
    ttlMs: Math.round(view.ttlMs),
    pollIntervalMs: Math.round(view.pollIntervalMs),
  };
}

/** The flat CreateTaskResult of a tools/call that became a task. */
export function createTaskResult(view: TaskView): JsonObject {
  return { resultType: "task", ...taskJson(view) };
}

const updateParams: StandardSchemaV1<
  unknown,
  { taskId: string; inputResponses: Record<string, JsonObject> }
> = {
  "~standard": {
    version: 1,
    vendor: "toolmesh",
    validate: (value) => {
      // The SDK lifts `inputResponses` out of the params (ctx.mcpReq.inputResponses).
      const params = value as { taskId?: unknown } | undefined;
      if (typeof params?.taskId !== "string")
        return { issues: [{ message: "taskId must be a string: the task's id" }] };
      return { value: { taskId: params.taskId, inputResponses: {} } };
    },
  },
};

/**
 * tasks/get, tasks/update and tasks/cancel of the Tasks extension on a 2026-07-28 server: each
 * refused -32021 unless the request declares the extension; an unknown (or another caller's)
 * task is -32602. tasks/get inlines a completed task's result, a failed one's error, and the
 * questions of one waiting for input.
 */
export function serveTasksExtension(
  server: Server,
  tasks: TaskDesk,
  principal: Principal,
  toResult: (tool: string, response: DispatchResponse) => JsonObject,
): void {
  const found = async (taskId: string) => {
    try {
      return await tasks.get(taskId, principal);
    } catch (error) {
      if (error instanceof TaskNotFound) throw taskNotFound(taskId);
      throw error;
    }
  };
  const gate = (ctx: ServerContext, method: string) => {
    if (!takesTasks(ctx)) throw tasksRequired(method);
  };
  server.setRequestHandler("tasks/get", { params: taskIdParams }, async ({ taskId }, ctx) => {
    gate(ctx, "tasks/get");
    const view = await found(taskId);
    const detail: JsonObject = { ...taskJson(view) };
    if (view.status === "completed" && view.end) detail.result = toResult(view.tool, view.end);
    if (view.status === "failed" && view.failure) detail.error = view.failure as JsonObject;
    if (view.status === "input_required" && view.inputRequests)
      detail.inputRequests = view.inputRequests as unknown as JsonObject;
    return detail;
  });
  server.setRequestHandler("tasks/update", { params: updateParams }, async ({ taskId }, ctx) => {
    gate(ctx, "tasks/update");
    await found(taskId);
    const inputResponses = (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
    try {
      await tasks.update(taskId, inputResponses, principal);
    } catch (error) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, ConnectError.from(error).rawMessage);
    }
    return {};
  });
  server.setRequestHandler("tasks/cancel", { params: taskIdParams }, async ({ taskId }, ctx) => {
    gate(ctx, "tasks/cancel");
    await found(taskId);
    await tasks.cancel(taskId, principal);
    return {};
  });
}
