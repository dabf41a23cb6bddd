import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { withinLimit } from "@toolmesh/names";
import {
  type Approval,
  ApprovalState,
  type CallbackEvent,
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  type Principal,
} from "@toolmesh/proto";
import type { ApprovalDesk } from "../../approvals/approval-desk.js";
import type { RunningCalls } from "../../chain/running-calls.js";
import { awaitsConfirmation } from "../../records/approval-records.js";
import type { HeldCallStore } from "../../records/held-calls.js";
import type { OutcomeReader } from "../../records/outcome-lookup.js";
import type { TaskIndex } from "../../records/task-index.js";
import type { InputRequest } from "../../runtimes/runtime.js";
import { CONFIRM_KEY, type Confirmations } from "../inputs/confirmations.js";
import type { InputDesk } from "../inputs/input-desk.js";
import type { ReplicaLink } from "../replica-link.js";

/** Where a task stands (the 2026-07-28 Tasks extension's words; 2025-11-25 has the same). */
export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** A task as its caller sees it: the call behind it, read from this replica or its records. */
export interface TaskView {
  taskId: string;
  tool: string;
  status: TaskStatus;
  statusMessage: string;
  createdMs: number;
  updatedMs: number;
  pollIntervalMs: number;
  /** How long the task is kept: as long as its call's outcome. */
  ttlMs: number;
  /** The call's end, once it ended (completed, failed or cancelled). */
  end?: DispatchResponse;
  /** A failed task's protocol-level error. */
  failure?: { code: number; message: string; data?: JsonValue };
  /** What the call waits for from its caller, while input_required. */
  inputRequests?: Record<string, InputRequest>;
}

/** Unknown, another caller's, or aged out: the same answer for each. */
export class TaskNotFound extends Error {
  override readonly name = "TaskNotFound";
}

export interface TaskDeskDeps {
  inputs: InputDesk;
  running: RunningCalls;
  held: HeldCallStore;
  outcomes: OutcomeReader;
  index: TaskIndex;
  confirmations: Confirmations;
  approvals: ApprovalDesk;
  instance: string;
  link?: ReplicaLink | undefined;
}

interface LocalTask {
  principal: Principal;
  tool: string;
  createdMs: number;
  end?: DispatchResponse;
  endedMs?: number;
}

const MIN_POLL_MS = 1000;
const MAX_POLL_MS = 30_000;
/** How long this replica answers for a task it ran after the task ended (then its records do). */
const LOCAL_KEEP_MS = 10 * 60 * 1000;

/**
 * MCP tasks are calls: the task id is the call id, its state what this replica knows of a call
 * it runs, else what the approvals bucket and the call's records say, so any replica answers for
 * any task. The index only says which calls are whose tasks.
 */
export class TaskDesk {
  private readonly local = new Map<string, LocalTask>();

  constructor(private readonly deps: TaskDeskDeps) {}

  get ttlMs(): number {
    return this.deps.index.ttlMs;
  }

  /** Makes a started (or held) call a task of its caller: indexed, then followed here. */
  async adopt(
    callId: string,
    tool: string,
    principal: Principal,
    done: Promise<DispatchResponse>,
  ): Promise<TaskView> {
    const task: LocalTask = { principal, tool, createdMs: Date.now() };
    this.local.set(callId, task);
    done.then(
      (end) => {
        task.end = end;
        task.endedMs = Date.now();
      },
      () => {
        // Unrecorded: its records, or the sweeper's, tell the end.
        this.local.delete(callId);
      },
    );
    done
      .finally(() => setTimeout(() => this.local.delete(callId), LOCAL_KEEP_MS).unref())
      .catch(() => {});
    await this.deps.index.add(principal, { callId, tool, createdMs: task.createdMs });
    return this.get(callId, principal);
  }

  /** The task now; TaskNotFound when the caller has no such task. */
  async get(taskId: string, principal: Principal): Promise<TaskView> {
    if (taskId === "" || !withinLimit("callId", taskId)) throw new TaskNotFound(taskId);
    const mine = (who: { agentId: string; userId: string }) =>
      who.agentId === principal.agentId && who.userId === principal.userId;
    const local = this.local.get(taskId);
    if (local && mine(local.principal)) {
      if (!local.end) {
        const waiting = this.deps.inputs.waiting(taskId, principal);
        return this.view(taskId, local, waiting ? "input_required" : "working", {
          ...(waiting ? { inputRequests: waiting } : {}),
        });
      }
      // A held call's first answer is PENDING: its hold says more than this replica does.
      if (local.end.status !== CallStatus.PENDING) return this.ended(taskId, local, local.end);
    }
    const held = (await this.deps.held.get(taskId))?.held;
    const approval = held?.approval;
    if (held && approval && mine(approval)) {
      const base = { principal, tool: approval.tool, createdMs: msOf(approval) };
      if (approval.state === ApprovalState.PENDING && awaitsConfirmation(approval))
        return this.view(taskId, base, "input_required", {
          inputRequests: { [CONFIRM_KEY]: this.deps.confirmations.question(held) },
          statusMessage: `awaiting your confirmation: call ${approval.callId} to tool "${approval.tool}" waits until ${untilOf(approval)}; answer "${CONFIRM_KEY}" (if nobody does, it fails with approval_expired)`,
          pollIntervalMs: pollFor(approval),
        });
      if (approval.state === ApprovalState.PENDING)
        return this.view(taskId, base, "working", {
          statusMessage: `awaiting approval: call ${approval.callId} to tool "${approval.tool}" (required by ${approval.requiredBy.join(", ")}) waits for an approver until ${untilOf(approval)}; if nobody decides by then it fails with approval_expired`,
          pollIntervalMs: pollFor(approval),
        });
    }
    const { outcomes, start } = await this.deps.outcomes.readCall(taskId);
    if (outcomes && mine(outcomes.first)) {
      const base = { principal, tool: outcomes.first.tool, createdMs: outcomes.createdMs };
      if (outcomes.last.status !== CallStatus.PENDING)
        return this.ended(
          taskId,
          { ...base, endedMs: outcomes.updatedMs },
          responseOf(outcomes.last),
        );
      // An asynchronous tool accepted it, or an approved call's end is on its way.
      return this.view(taskId, base, "working", {
        statusMessage: "the call runs; its end is reported later",
      });
    }
    if (start && mine(start)) {
      const base = {
        principal,
        tool: start.tool,
        createdMs: start.time ? timestampMs(start.time) : Date.now(),
      };
      const waiting =
        start.instance !== this.deps.instance && this.deps.link
          ? await this.deps.link.waiting(start.instance, taskId, principal).catch(() => undefined)
          : this.deps.inputs.waiting(taskId, principal);
      return this.view(taskId, base, waiting ? "input_required" : "working", {
        ...(waiting ? { inputRequests: waiting } : {}),
      });
    }
    // Created this moment on another replica: indexed, records not read yet.
    const indexed = await this.deps.index.find(principal, taskId);
    if (indexed)
      return this.view(taskId, { tool: indexed.tool, createdMs: indexed.createdMs }, "working");
    throw new TaskNotFound(taskId);
  }

  /** The caller's tasks, newest first. */
  async list(principal: Principal, limit: number): Promise<TaskView[]> {
    const indexed = await this.deps.index.list(principal, limit);
    const views = await Promise.all(
      indexed.map((t) => this.get(t.callId, principal).catch(() => undefined)),
    );
    return views.filter((v): v is TaskView => v !== undefined);
  }

  /**
   * Answers questions a task waits on (tasks/update): the caller's confirmation of a held call,
   * or the tool's questions, here or on the replica that runs the call.
   */
  async update(
    taskId: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<void> {
    const view = await this.get(taskId, principal);
    if (view.status !== "input_required") return;
    const held = (await this.deps.held.get(taskId))?.held;
    const confirm = responses[CONFIRM_KEY];
    if (held?.approval && awaitsConfirmation(held.approval)) {
      if (confirm) await this.deps.confirmations.decide(held, confirm, principal);
      return;
    }
    if (this.deps.inputs.waiting(taskId, principal)) {
      this.deps.inputs.answerCall(taskId, responses, principal);
      return;
    }
    const { start } = await this.deps.outcomes.readCall(taskId);
    if (start && start.instance !== this.deps.instance && this.deps.link)
      await this.deps.link.update(start.instance, taskId, responses, principal);
  }

  /**
   * Cancels a task (tasks/cancel): a running call is interrupted (it ends INTERRUPTED
   * `cancelled`), a held one withdrawn (REFUSED `cancelled`); an ended task is left as it is.
   */
  async cancel(taskId: string, principal: Principal): Promise<void> {
    const view = await this.get(taskId, principal);
    if (view.end) return;
    const running = this.deps.running.get(taskId);
    if (running && running.agentId === principal.agentId) {
      running.interrupt("cancelled");
      return;
    }
    const held = (await this.deps.held.get(taskId))?.held;
    if (held?.approval?.state === ApprovalState.PENDING) {
      await this.deps.approvals.withdraw(principal, taskId).catch((error: unknown) => {
        // Decided meanwhile: it runs, or ended; a cancel of what runs follows below.
        if (ConnectError.from(error).code !== Code.FailedPrecondition) throw error;
      });
      return;
    }
    const { start } = await this.deps.outcomes.readCall(taskId);
    if (start && start.instance !== this.deps.instance && this.deps.link)
      await this.deps.link.cancel(start.instance, taskId, principal);
  }

  /** Cancels a running call of the caller's on this replica (another replica asked). */
  cancelHere(taskId: string, principal: Principal): boolean {
    const running = this.deps.running.get(taskId);
    if (!running || running.agentId !== principal.agentId) return false;
    running.interrupt("cancelled");
    return true;
  }

  private ended(taskId: string, task: LocalTask, end: DispatchResponse): TaskView {
    const code = end.error?.code ?? "";
    const details = (end.error?.details ?? {}) as JsonObject;
    const jsonrpc = details.jsonrpc_code;
    const base = { end, updatedMs: task.endedMs ?? Date.now() };
    if (end.status === CallStatus.SUCCESS)
      return this.view(taskId, task, "completed", { ...base, statusMessage: "completed" });
    if (code === "cancelled")
      return this.view(taskId, task, "cancelled", {
        ...base,
        statusMessage: end.error?.message ?? "",
      });
    const message = `${code || "failed"}: ${end.error?.message ?? "the call failed"}`;
    // A protocol-level error of the tool's server, or a call stopped short of its end, failed;
    // a tool that ran and reported an error (or a call refused) completed with an error result.
    if (typeof jsonrpc === "number")
      return this.view(taskId, task, "failed", {
        ...base,
        statusMessage: message,
        failure: {
          code: jsonrpc,
          message: end.error?.message ?? "",
          ...(details.data !== undefined ? { data: details.data } : {}),
        },
      });
    if (end.status === CallStatus.INTERRUPTED)
      return this.view(taskId, task, "failed", {
        ...base,
        statusMessage: message,
        failure: { code: code === "timeout" ? -32001 : -32603, message: end.error?.message ?? "" },
      });
    return this.view(taskId, task, "completed", { ...base, statusMessage: message });
  }

  private view(
    taskId: string,
    task: Pick<LocalTask, "tool" | "createdMs">,
    status: TaskStatus,
    extra: Partial<TaskView> = {},
  ): TaskView {
    return {
      taskId,
      tool: task.tool,
      status,
      statusMessage:
        status === "input_required"
          ? "the call waits for its caller's input (inputRequests)"
          : "the call runs",
      createdMs: task.createdMs,
      updatedMs: Math.max(task.createdMs, Date.now()),
      pollIntervalMs: MIN_POLL_MS,
      ttlMs: this.ttlMs,
      ...extra,
    };
  }
}

/** A held call's poll interval: about a hundred polls over the hold, at least a second apart. */
function pollFor(approval: Approval): number {
  const holdMs =
    approval.expiresAt && approval.requestedAt
      ? timestampMs(approval.expiresAt) - timestampMs(approval.requestedAt)
      : 0;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.round(holdMs / 100)));
}

function untilOf(approval: Approval): string {
  return approval.expiresAt
    ? new Date(timestampMs(approval.expiresAt)).toISOString()
    : "its hold expires";
}

function msOf(approval: Approval): number {
  return approval.requestedAt ? timestampMs(approval.requestedAt) : Date.now();
}

/** A call's end as its records state it, as the response its call would have answered. */
export function responseOf(last: CallbackEvent): DispatchResponse {
  return create(DispatchResponseSchema, {
    callId: last.callId,
    traceId: last.traceId,
    status: last.status,
    ...(last.output ? { output: last.output } : {}),
    ...(last.error ? { error: last.error } : {}),
    durationMs: last.durationMs,
    attempts: last.attempts,
  });
}
