import { create } from "@bufbuild/protobuf";
import { CallErrorSchema, type InvokeRequest, type Tool, TraceEventKind } from "@toolmesh/proto";
import type { CallRecord } from "../records/call-recorder.js";
import type { AttemptResult, CallerChannel, ToolRuntime } from "../runtimes/runtime.js";
import type { CallSpans } from "./telemetry.js";
import type { ChainSettings } from "./types.js";

/** One execution of a tool: up to its retry policy's attempts, within one deadline. */
export interface AttemptPlan {
  tool: Tool & { spec: NonNullable<Tool["spec"]> };
  runtime: ToolRuntime | undefined;
  request: InvokeRequest;
  /** Epoch ms by which the call must be over, retries included. */
  deadline: number;
  /** Aborted on timeout, Cancel, a vanished caller or shutdown. */
  signal: AbortSignal;
  record: CallRecord;
  onEvent: Parameters<ToolRuntime["invoke"]>[0]["onEvent"];
  /** An `attempt` span per attempt, whose traceparent the backend receives. */
  spans?: CallSpans;
  /** The caller, when it can answer what the tool asks mid-call. */
  caller?: CallerChannel | undefined;
}

/**
 * Runs the attempts of a call: a tool is retried only when it is idempotent and the failure is
 * transient, with jittered exponential backoff, never past the deadline. Each attempt of a
 * retried call leaves a TOOL_ATTEMPT trace event.
 */
export async function runAttempts(
  plan: AttemptPlan,
): Promise<{ result: AttemptResult | undefined; attempts: number }> {
  const { tool, runtime, request, deadline, signal, record } = plan;
  const spec = tool.spec;
  const maxAttempts = spec.idempotent ? Math.max(1, spec.retryPolicy?.maxAttempts ?? 1) : 1;
  let attempt = 0;
  let result: AttemptResult | undefined;
  while (attempt < maxAttempts) {
    attempt++;
    request.attempt = attempt;
    request.deadlineMs = Math.max(0, deadline - Date.now());
    const span = plan.spans?.attempt(attempt);
    result = runtime
      ? await runtime.invoke({
          tool,
          request,
          signal,
          onEvent: plan.onEvent,
          traceparent: span?.traceparent,
          caller: plan.caller,
        })
      : {
          ok: false,
          error: create(CallErrorSchema, {
            code: "backend_misconfigured",
            message: `tool "${spec.name}" has no runtime; its owner must register one`,
          }),
          transient: false,
        };
    span?.end(result);
    if (signal.aborted) break;
    const retrying = !result.ok && result.transient && attempt < maxAttempts;
    if (maxAttempts > 1 && (attempt > 1 || retrying)) {
      record.trace(TraceEventKind.TOOL_ATTEMPT, {
        attempt,
        ok: result.ok,
        ...(result.ok ? {} : { error_code: result.error.code, transient: result.transient }),
      });
    }
    if (!retrying) break;
    const base = Math.min(
      (spec.retryPolicy?.initialBackoffMs || 100) * 2 ** (attempt - 1),
      spec.retryPolicy?.maxBackoffMs || 5000,
    );
    const backoff = base / 2 + Math.random() * (base / 2);
    if (Date.now() + backoff >= deadline) break;
    await sleep(backoff, signal);
    if (signal.aborted) break;
  }
  return { result, attempts: attempt };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The tool's timeout, narrowed by the request's and the RPC deadline, within the limits. */
export function effectiveTimeout(
  settings: ChainSettings,
  toolTimeoutMs: number,
  requestTimeoutMs: number,
  rpcTimeoutMs: number | undefined,
): number {
  let timeoutMs = toolTimeoutMs || settings.defaultTimeoutMs;
  if (requestTimeoutMs > 0) timeoutMs = Math.min(timeoutMs, requestTimeoutMs);
  if (rpcTimeoutMs !== undefined && rpcTimeoutMs > 0) timeoutMs = Math.min(timeoutMs, rpcTimeoutMs);
  // Whole milliseconds: a grpc-timeout in micro- or nanoseconds (Go's clients send them) parses
  // to a fraction, and a fractional deadline is not a Timestamp protobuf can encode.
  return Math.max(1, Math.floor(Math.min(timeoutMs, settings.maxTimeoutMs)));
}
