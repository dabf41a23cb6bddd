import { create, type JsonObject } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampMs } from "@bufbuild/protobuf/wkt";
import {
  type CreateTaskResult,
  type GetTaskResult,
  type JSONRPCRequest,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Result,
  Server,
  type ServerContext,
  type StandardSchemaV1,
  type Task,
} from "@modelcontextprotocol/server";
import { clipped, withinLimit } from "@toolmesh/names";
import {
  type Approval,
  ApprovalState,
  awaitsApproval,
  type CallbackEvent,
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  type Principal,
  type Tool,
} from "@toolmesh/proto";
import { approvalRequirements } from "../../chain/checks.js";
import type { CheckDeps } from "../../chain/types.js";
import type { HeldCallStore } from "../../records/held-calls.js";
import { type CallOutcomes, hasEnded, type OutcomeReader } from "../../records/outcome-lookup.js";

/**
 * A held call as an MCP task (2025-11-25, the experimental tasks utility): the task id is the
 * call id, and every answer is read from the shared approvals bucket and the outcome stream, so
 * any Dispatcher replica answers for a task another one created.
 */
export interface McpTaskDeps {
  outcomes: OutcomeReader;
  held: HeldCallStore;
  /** The longest tasks/result waits for a call to end (TOOLMESH_MAX_TIMEOUT_MS). */
  resultWaitMs: number;
}

/** What /mcp declares at initialize: tools/call may be task-augmented; no tasks/list or cancel. */
export const TASKS_CAPABILITY = { requests: { tools: { call: {} } } };

/** The `_meta` key of CreateTaskResult whose text a host may hand the model while it waits. */
const MODEL_IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response";
const MIN_POLL_MS = 1000;
const MAX_POLL_MS = 30_000;

/**
 * A Server whose tools/call may answer a CreateTaskResult. The SDK checks every tools/call result
 * against CallToolResult, which a task is not; a task-augmented call skips only that check.
 */
export class TaskingServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const checked = super._wrapHandler(method, handler);
    if (method !== "tools/call") return checked;
    return (request, ctx) =>
      request.params?.task !== undefined ? handler(request, ctx) : checked(request, ctx);
  }
}

/** Whether a call of this tool by this caller waits for an approver (and so may be a task). */
export function needsApproval(deps: CheckDeps, principal: Principal, tool: Tool): boolean {
  if (!tool.spec) return false;
  const decision = deps.policy.decide(principal, deps.catalog.policyView(tool));
  return approvalRequirements(tool.spec, decision).length > 0;
}

/**
 * The CreateTaskResult of a task-augmented call. A task starts `working` (the spec's rule), even
 * when the call has already ended: tasks/get then reports the end.
 */
export async function createdTask(
  deps: McpTaskDeps,
  response: DispatchResponse,
): Promise<CreateTaskResult> {
  const found = await deps.outcomes.read(response.callId);
  const held = awaitsApproval(response);
  const approval = held ? (await deps.held.get(response.callId))?.held.approval : undefined;
  const now = new Date().toISOString();
  const task: Task = found
    ? { ...taskOf(found, approval, deps.outcomes.retentionMs), status: "working" }
    : {
        taskId: response.callId,
        status: "working",
        createdAt: now,
        lastUpdatedAt: now,
        ttl: deps.outcomes.retentionMs || null,
        pollInterval: MIN_POLL_MS,
      };
  if (held && approval) task.statusMessage = awaitingText(approval);
  else if (!held) task.statusMessage = "the call has started; tasks/get reports when it ends";
  return {
    task,
    _meta: { [MODEL_IMMEDIATE_RESPONSE]: task.statusMessage ?? "the call has started" },
  };
}

/** The params of tasks/get and tasks/result (the SDK types no 2025-11-25 task method). */
const taskIdParams: StandardSchemaV1<unknown, { taskId: string }> = {
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

/**
 * Registers tasks/get and tasks/result on a server of one 2025-11-25 request. `toResult` turns a
 * call's end into the CallToolResult tools/call would have answered.
 */
export function serveTasks(
  server: Server,
  deps: McpTaskDeps,
  caller: { principal: Principal; signal: AbortSignal },
  toResult: (tool: string, response: DispatchResponse) => JsonObject,
): void {
  server.setRequestHandler("tasks/get", { params: taskIdParams }, ({ taskId }) =>
    getTask(deps, caller.principal, taskId),
  );
  server.setRequestHandler("tasks/result", { params: taskIdParams }, ({ taskId }) =>
    taskResult(deps, caller.principal, taskId, caller.signal, toResult),
  );
}

/** tasks/get: the task's state, derived from the call's outcomes and its hold. */
export async function getTask(
  deps: McpTaskDeps,
  principal: Principal,
  taskId: string,
): Promise<GetTaskResult> {
  const found = await ownCall(deps, principal, taskId);
  const approval = awaitsApproval(found.last)
    ? (await deps.held.get(taskId))?.held.approval
    : undefined;
  return taskOf(found, approval, deps.outcomes.retentionMs);
}

/**
 * tasks/result: the CallToolResult a direct tools/call would have answered, once the call ends.
 * It blocks until then (the spec's rule), at most until the HTTP request ends or `resultWaitMs`.
 */
export async function taskResult(
  deps: McpTaskDeps,
  principal: Principal,
  taskId: string,
  signal: AbortSignal,
  toResult: (tool: string, response: DispatchResponse) => JsonObject,
): Promise<Result> {
  let found = await ownCall(deps, principal, taskId);
  if (!hasEnded(found)) {
    await deps.outcomes.waitForEnd(
      taskId,
      found.first.tool,
      AbortSignal.any([signal, AbortSignal.timeout(deps.resultWaitMs)]),
    );
    found = await ownCall(deps, principal, taskId);
    if (!hasEnded(found))
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `task ${taskId} is still working after ${Math.round(deps.resultWaitMs / 1000)} s; call tasks/result again, or poll tasks/get`,
      );
  }
  const last = found.last;
  const response = create(DispatchResponseSchema, {
    callId: last.callId,
    traceId: last.traceId,
    status: last.status,
    ...(last.output ? { output: last.output } : {}),
    ...(last.error ? { error: last.error } : {}),
    durationMs: last.durationMs,
    attempts: last.attempts,
  });
  return { ...toResult(last.tool, response), _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
}

/**
 * The call behind a task id, if the caller made it. Another agent's (or user's) call answers
 * exactly as an unknown one does, so a task id reveals nothing of calls the caller did not make.
 */
async function ownCall(
  deps: McpTaskDeps,
  principal: Principal,
  taskId: string,
): Promise<CallOutcomes> {
  const found =
    taskId !== "" && withinLimit("callId", taskId) ? await deps.outcomes.read(taskId) : undefined;
  if (
    !found ||
    found.first.agentId !== principal.agentId ||
    found.first.userId !== principal.userId
  )
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `task not found: ${JSON.stringify(clipped("callId", taskId))} is not a task of yours (the taskId of a CreateTaskResult from tools/call), or its records have expired`,
    );
  return found;
}

/**
 * A call's outcomes as a task: PENDING is `working` (a third party approves, not the requestor,
 * so never `input_required`); SUCCESS `completed`; every other end `failed`, as the spec has a
 * tool result with isError.
 */
function taskOf(found: CallOutcomes, approval: Approval | undefined, retentionMs: number): Task {
  const { first, last } = found;
  const createdMs = found.createdMs;
  const holdMs = approval?.expiresAt ? timestampMs(approval.expiresAt) - createdMs : 0;
  const updatedMs = Math.max(createdMs, found.updatedMs, msOf(approval?.decidedAt) ?? 0);
  return {
    taskId: first.callId,
    status:
      last.status === CallStatus.PENDING
        ? "working"
        : last.status === CallStatus.SUCCESS
          ? "completed"
          : "failed",
    statusMessage: statusText(last, approval),
    createdAt: new Date(createdMs).toISOString(),
    lastUpdatedAt: new Date(updatedMs).toISOString(),
    // The task lives as long as the outcome stream keeps the call's outcomes.
    ttl: retentionMs || null,
    // About a hundred polls over a whole hold, never more than one a second.
    pollInterval: Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.round(holdMs / 100))),
  };
}

function statusText(last: CallbackEvent, approval: Approval | undefined): string {
  if (last.status === CallStatus.SUCCESS) return "completed; tasks/result has the tool's result";
  if (last.status !== CallStatus.PENDING)
    return `${last.error?.code || "failed"}: ${last.error?.message ?? "the call failed"}`;
  if (!awaitsApproval(last))
    return "the tool accepted the call and reports its outcome later; tasks/result waits for it";
  if (!approval || approval.state === ApprovalState.PENDING)
    return approval
      ? awaitingText(approval)
      : "the hold has ended: the approved call is running, or its end is being recorded";
  if (approval.state === ApprovalState.APPROVED)
    return `approved by ${approval.decidedBy}; the tool is running`;
  return `the hold ended (${ApprovalState[approval.state]?.toLowerCase()}); its outcome is being recorded`;
}

function awaitingText(approval: Approval): string {
  const until = approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "its expiry";
  return `awaiting approval: call ${approval.callId} to tool "${approval.tool}" (required by ${approval.requiredBy.join(", ")}) waits for an approver until ${until}; if nobody decides by then it fails with approval_expired`;
}

function msOf(timestamp: Timestamp | undefined): number | undefined {
  return timestamp ? timestampMs(timestamp) : undefined;
}
