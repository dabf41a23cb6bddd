import { create } from "@bufbuild/protobuf";
import {
  CacheUse,
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  InvokeRequestSchema,
  RuntimeKind,
  statusName,
  TraceEventKind,
} from "@toolmesh/proto";
import type { ToolRuntime } from "../runtimes/runtime.js";
import { effectiveTimeout, runAttempts } from "./attempts.js";
import { recordedCaller, traceBackendEvent } from "./backend-events.js";
import { callCost, holdBudgets } from "./budgets.js";
import { classify } from "./outcome.js";
import { limitOutput } from "./record-limits.js";
import { unrecorded } from "./recording-gate.js";
import { CallRefused } from "./refusal.js";
import type { InterruptReason } from "./running-calls.js";
import type { dispatcherMetrics } from "./telemetry.js";
import type { ChainDeps, Execution } from "./types.js";

/**
 * Runs a checked call: its start record (acked first for a tool with side effects, held for the
 * end a moment for a read-only one), the backend with a deadline and retries, then its end
 * record, acked before the reply.
 */
export async function executeCall(
  deps: ChainDeps,
  metrics: ReturnType<typeof dispatcherMetrics>,
  call: Execution,
): Promise<DispatchResponse> {
  const { checked, principal, record, started, options, spans } = call;
  const { tool, args } = checked;
  const spec = tool.spec;
  const { settings, running } = deps;
  const { callId, traceId, parentId } = record.call;
  const timeoutMs = effectiveTimeout(
    settings,
    spec.timeoutMs,
    call.requestTimeoutMs,
    options.rpcTimeoutMs,
  );
  const deadline = started + timeoutMs;

  const controller = new AbortController();
  const interrupt = (reason: InterruptReason) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const timer = setTimeout(() => interrupt("timeout"), timeoutMs);
  const onCallerGone = () => interrupt("cancelled");
  options.signal?.addEventListener("abort", onCallerGone, { once: true });
  running.add(callId, { agentId: principal.agentId, tool: spec.name, interrupt });
  const cleanup = () => {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onCallerGone);
    running.delete(callId);
  };

  const budgetHold = holdBudgets(deps.budgets, checked.budgeted, spec.price);
  spans.step("execute");
  // A read-only call's start waits a moment for its end, to be written with it as one record;
  // a tool with side effects (or a call an approver let through) has it written at once.
  const startAcked = record.start(
    {
      args,
      timeoutMs,
      runtime: spec.runtime?.kind.case ?? RuntimeKind[RuntimeKind.UNSPECIFIED],
      startedMs: started,
      deadlineMs: deadline,
    },
    { linger: !spec.sideEffects && !call.approved },
  );
  if (spec.sideEffects) {
    // A tool that changes the world runs only once its start record is acked.
    try {
      await startAcked;
    } catch (error) {
      cleanup();
      if (budgetHold) deps.budgets?.charge(budgetHold, 0n, Date.now());
      if (checked.probe) deps.breakers?.unprobe(spec.name);
      throw new CallRefused(unrecorded(error, "start", spec.name), callId, traceId);
    }
    call.approved?.onStarted();
  } else {
    // A read-only tool runs alongside its start record (or before it, when it is held for the
    // end); its end record follows it.
    startAcked.then(() => call.approved?.onStarted()).catch(() => {});
  }
  const request = create(InvokeRequestSchema, {
    tool: spec.name,
    arguments: args,
    context: { traceId, parentId, callId },
    principal: {
      agentId: principal.agentId,
      userId: principal.userId,
      roles: principal.roles,
      keyId: principal.keyId,
    },
  });
  let ran: Awaited<ReturnType<typeof runAttempts>> = { result: undefined, attempts: 0 };
  // A tool with a cache answers a call it answered before for the same definition, arguments
  // and visibility from the cache, without running; the call is recorded all the same.
  const cacheKey = deps.cache?.keyOf(tool, args, principal, checked.grantIds);
  const hit = cacheKey !== undefined ? deps.cache?.get(tool, cacheKey) : undefined;
  if (hit) {
    record.trace(TraceEventKind.CACHE_HIT, { cached_from: hit.callId });
    ran = { result: { ok: true, output: hit.output }, attempts: 0 };
  }
  try {
    if (!controller.signal.aborted && !hit) {
      ran = await runAttempts({
        tool,
        runtime: runtimeOf(deps.runtimes, spec.runtime?.kind.case),
        request,
        deadline,
        signal: controller.signal,
        record,
        onEvent: (event) => {
          traceBackendEvent(record, event);
          options.onEvent?.(event);
        },
        spans,
        caller: options.caller && recordedCaller(record, options.caller, deadline),
      });
    }
  } finally {
    cleanup();
  }

  const finished = Date.now();
  const cost = callCost(spec.price, {
    attempts: ran.attempts,
    durationMs: finished - started,
    reportedMicros: ran.result?.costMicros ?? 0n,
  });
  // Counted here at once, so this Dispatcher's next call sees it before Callback has it.
  if (budgetHold) deps.budgets?.charge(budgetHold, cost?.micros ?? 0n, finished);
  if (ran.attempts > 1) metrics.retries.inc({ tool: spec.name }, ran.attempts - 1);
  spans.step("record");
  const end = limitOutput(
    spec.name,
    classify({
      tool: spec.name,
      interrupted: controller.signal.aborted
        ? (String(controller.signal.reason) as InterruptReason)
        : undefined,
      result: ran.result,
      output: checked.validators.output,
      timeoutMs,
    }),
    deps.recorder.maxPayload,
  );
  if (hit) {
    if (checked.probe) deps.breakers?.unprobe(spec.name);
  } else deps.breakers?.settle(spec, end, callId, checked.probe ?? false);
  if (cacheKey !== undefined && !hit && end.status === CallStatus.SUCCESS && end.output)
    deps.cache?.put(tool, cacheKey, end.output, callId);
  // The end record follows the start record's ack (or carries the start when it was held), so a
  // call's records never tell two stories: an end without its start is never stored, and one
  // whose start failed is never written.
  const endStored = record.finished(end, {
    args,
    attempts: ran.attempts,
    startedMs: started,
    finishedMs: finished,
    cost,
    budgets: budgetHold?.budgetIds ?? [],
    ...(cacheKey !== undefined
      ? { cache: hit ? CacheUse.HIT : CacheUse.MISS, cachedFrom: hit?.callId ?? "" }
      : {}),
  });
  const response = create(DispatchResponseSchema, {
    callId,
    traceId,
    status: end.status,
    output: end.output,
    error: end.error,
    durationMs: finished - started,
    attempts: ran.attempts,
    cost,
    cachedFrom: hit?.callId ?? "",
  });
  // The output goes back only once the call's end record is stored.
  try {
    await endStored;
  } catch (error) {
    throw unrecorded(error, record.startMayBeStored ? "end" : "call", spec.name);
  }
  if (call.idempotencyKey) {
    await deps.idempotency.put(principal.agentId, call.idempotencyKey, response);
  }
  const status = statusName(end.status);
  metrics.calls.inc({ tool: spec.name, status });
  metrics.duration.observe({ tool: spec.name, status }, (Date.now() - started) / 1000);
  spans.end(end.status);
  return response;
}

function runtimeOf(
  runtimes: ChainDeps["runtimes"],
  kind: string | undefined,
): ToolRuntime | undefined {
  return kind === "grpc" ||
    kind === "local" ||
    kind === "remote" ||
    kind === "docker" ||
    kind === "mcp"
    ? runtimes[kind]
    : undefined;
}
