import type { JsonObject } from "@bufbuild/protobuf";
import { newCallId } from "@toolmesh/names";
import {
  AWAITING_APPROVAL,
  CallStatus,
  type DispatchRequest,
  type DispatchResponse,
  type Principal,
  TaskSupport,
  type Tool,
} from "@toolmesh/proto";
import { isMcpBacked } from "../../catalog/mcp-entries.js";
import type { DispatchChain } from "../../chain/dispatch-chain.js";
import type { DispatchOptions } from "../../chain/types.js";
import { detachable } from "../inputs/answerable.js";
import type { DeferredCaller } from "../inputs/deferred-caller.js";
import type { InputDesk } from "../inputs/input-desk.js";
import { readState } from "../inputs/request-state.js";
import type { TaskDesk, TaskView } from "./task-desk.js";

/** What starting a call that may become a task needs. */
export interface TaskableDeps {
  chain: DispatchChain;
  inputs: InputDesk;
  tasks: TaskDesk;
}

/** How a call that may be a task went: it stopped in time (its end, or a question), or became one. */
export type Taskable = { response: DispatchResponse } | { task: TaskView };

/** How a tool's calls may run as tasks for a client that takes them. */
export function taskSupportOf(
  tool: Tool | undefined,
  held: boolean,
): "forbidden" | "optional" | "required" {
  const support = tool?.spec?.taskSupport ?? TaskSupport.UNSPECIFIED;
  if (support === TaskSupport.REQUIRED) return "required";
  // A long-running tool, a call that waits for someone, or an MCP tool that may ask its caller.
  if (support === TaskSupport.OPTIONAL || held || isMcpBacked(tool)) return "optional";
  return "forbidden";
}

/**
 * Starts a call for a client that takes tasks: if it ends or asks its caller something within
 * `windowMs`, that is the answer (a quick call needs no task; a question first is answered in
 * the request's own rounds); a held call, or one still running after the window, becomes a task
 * and runs on without the request.
 */
export async function startTaskable(
  deps: TaskableDeps,
  req: DispatchRequest,
  principal: Principal,
  options: DispatchOptions,
  caller: DeferredCaller,
  windowMs: number,
  /** The client asked for a task (2025-11-25): it gets one however quick the call. */
  always = false,
): Promise<Taskable> {
  const callId = newCallId();
  const { signal, detach } = detachable(options.signal);
  let done: Promise<DispatchResponse> = Promise.resolve(undefined as never);
  const stop = deps.inputs.dispatch(caller, principal, (deferred) => {
    done = deps.chain.dispatch(req, principal, { ...options, signal, caller: deferred, callId });
    return done;
  });
  // A refusal after the window is the task's end, read from its records.
  stop.catch(() => {});
  const first = await within(stop, windowMs);
  if (first && !isHeld(first) && !always) {
    if (first.inputRequired) detach();
    return { response: first };
  }
  detach();
  return { task: await deps.tasks.adopt(first?.callId || callId, req.tool, principal, done) };
}

/**
 * Answers a call that asked its caller before it became a task (a 2026-07-28 retry with a
 * request state): its next stop within `windowMs`, or the task it becomes meanwhile.
 */
export async function continueTaskable(
  deps: TaskableDeps,
  state: string,
  responses: Record<string, JsonObject>,
  principal: Principal,
  windowMs: number,
): Promise<Taskable> {
  const claims = readState("requestState", state);
  const stop = deps.inputs.answer(state, responses, principal);
  stop.catch(() => {});
  const next = await within(stop, windowMs);
  if (next) return { response: next };
  const done = deps.inputs.doneOf(claims.callId);
  // On another replica the call runs on there: its next stop is the answer, however long.
  if (!done) return { response: await stop };
  return { task: await deps.tasks.adopt(claims.callId, claims.tool, principal, done) };
}

/** True for a call held for approval or its caller's confirmation. */
function isHeld(response: DispatchResponse): boolean {
  return response.status === CallStatus.PENDING && response.error?.code === AWAITING_APPROVAL;
}

/** The stop, if it comes within `ms`; undefined otherwise (it may still come). */
async function within(
  stop: Promise<DispatchResponse>,
  ms: number,
): Promise<DispatchResponse | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      stop,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
