import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type ConnectError, codeName } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  type BackendEvent,
  CallErrorSchema,
  CallStatus,
  type DispatchRequest,
  type DispatchResponse,
  DispatchResponseSchema,
  InvokeRequestSchema,
  type Principal,
  RuntimeKind,
} from "@toolmesh/proto";
import { parseTraceparent, startTracing, type Tracing } from "@toolmesh/telemetry";
import { effectiveTimeout, runAttempts } from "./attempts.js";
import { traceBackendEvent } from "./backend-events.js";
import {
  type CheckedCall,
  checkCall,
  claimCallId,
  newCallId,
  type PermissionGate,
  Refusal,
  recordIdentity,
} from "./call-checks.js";
import type { CallRecord, CallRecorder } from "./call-recorder.js";
import {
  CallSpans,
  type CallTraceContext,
  dispatcherMetrics,
  statusLabel,
} from "./call-telemetry.js";
import type { CallIdOwners, IdempotencyStore } from "./idempotency.js";
import { classify } from "./outcome.js";
import type { CallLimiter } from "./rate-limits.js";
import { limitOutput } from "./record-limits.js";
import { checkRecordable, recordRefusal, unrecorded } from "./recording-gate.js";
import type { InterruptReason, RunningCalls } from "./running-calls.js";
import type { ToolRuntime } from "./runtimes/runtime.js";
import type { ToolCatalog } from "./tool-catalog.js";

export { type PermissionGate, Refusal } from "./call-checks.js";

export interface ChainSettings {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
}

export interface ChainDeps {
  catalog: ToolCatalog;
  policy: PermissionGate;
  recorder: CallRecorder;
  runtimes: {
    grpc: ToolRuntime;
    local: ToolRuntime;
    remote: ToolRuntime;
    docker: ToolRuntime;
    mcp?: ToolRuntime;
  };
  idempotency: IdempotencyStore;
  callIds: CallIdOwners;
  running: RunningCalls;
  limits?: CallLimiter | undefined;
  settings: ChainSettings;
  log: Logger;
  /** Spans for each chain step (startTracing); off when omitted. */
  tracing?: Tracing;
}

/** Per-call options that come from the transport. */
export interface DispatchOptions extends CallTraceContext {
  /** Milliseconds left before the RPC's own deadline, if it has one. */
  rpcTimeoutMs?: number | undefined;
  /** Aborted when the caller goes away. */
  signal?: AbortSignal | undefined;
  /** Trace id shared by a batch, used when the call has none. */
  batchTraceId?: string;
  /** A refusal the transport already decided (a model's arguments that are not JSON). */
  refusal?: Refusal;
  /** Hears the backend's own events after they are traced (MCP progress notifications). */
  onEvent?: (event: BackendEvent) => void;
}

/** A refused call: the error the caller sees, plus the ids it was recorded under. */
export class CallRefused extends Error {
  override name = "CallRefused";
  constructor(
    readonly error: ConnectError,
    readonly callId: string,
    readonly traceId: string,
  ) {
    super(error.message, { cause: error });
  }
}

/** One call that passed its checks, ready to run. */
interface Execution {
  checked: CheckedCall;
  principal: Principal;
  record: CallRecord;
  /** Epoch ms the call arrived. */
  started: number;
  options: DispatchOptions;
  /** The timeout the request asked for (0: the tool's own). */
  requestTimeoutMs: number;
  /** Stores the response for replays when set. */
  idempotencyKey: string;
  spans: CallSpans;
}

/**
 * The whole tool-call chain: check, trace, execute, record, reply. Transport-free, so the
 * Connect handlers and the grpc-js port share it.
 */
export class DispatchChain {
  private readonly inflightKeys = new Map<string, Promise<DispatchResponse>>();
  private readonly metrics = dispatcherMetrics();
  private readonly tracing: Tracing;

  constructor(private readonly deps: ChainDeps) {
    this.tracing = deps.tracing ?? startTracing("dispatcher", {});
  }

  /** Runs one call; refusals throw ConnectError with details (after their audit record is acked). */
  async dispatch(
    req: DispatchRequest,
    principal: Principal,
    options: DispatchOptions = {},
  ): Promise<DispatchResponse> {
    try {
      return await this.run(req, principal, options);
    } catch (error) {
      if (error instanceof CallRefused) throw error.error;
      throw error;
    }
  }

  /** Runs one call of a batch: refusals become results with status REFUSED. */
  async dispatchSettled(
    req: DispatchRequest,
    principal: Principal,
    options: DispatchOptions,
  ): Promise<DispatchResponse> {
    try {
      return await this.run(req, principal, options);
    } catch (error) {
      if (!(error instanceof CallRefused)) throw error;
      const code = codeName(error.error.code);
      return create(DispatchResponseSchema, {
        callId: error.callId,
        traceId: error.traceId,
        status: CallStatus.REFUSED,
        refusalCode: code,
        error: create(CallErrorSchema, { code, message: error.error.rawMessage }),
      });
    }
  }

  private async run(
    req: DispatchRequest,
    principal: Principal,
    options: DispatchOptions,
  ): Promise<DispatchResponse> {
    const started = Date.now();
    req.tool = this.deps.catalog.resolve(req.tool);
    const ctx = req.context;
    const callId = ctx?.callId || newCallId();
    // A caller's W3C traceparent names the trace when the request does not: one id everywhere.
    const traceId =
      ctx?.traceId ||
      options.batchTraceId ||
      parseTraceparent(options.traceparent)?.traceId ||
      newTraceId();
    // Records are filed under valid ids even when the request's are not (it is refused).
    const record = this.deps.recorder.begin(
      recordIdentity(
        { traceId, callId, parentId: ctx?.parentId ?? "", tool: req.tool, principal },
        newTraceId,
      ),
    );

    const spans = new CallSpans(
      this.tracing,
      { ...record.call, tool: req.tool, agentId: principal.agentId },
      options,
    );

    let checked: CheckedCall;
    try {
      if (options.refusal) throw options.refusal;
      spans.step("resolve");
      checked = checkCall(this.deps, req, principal, callId, (step) => spans.step(step));
      checkRecordable(this.deps.recorder, checked);
      // A call id the Dispatcher made is this call's alone; one a caller chose must be claimed.
      if (ctx?.callId) await claimCallId(this.deps.callIds, record.call.callId, principal);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      // Another call's id: the refusal is filed under a fresh id, so that call is left alone.
      const filed = error.foreignCallId
        ? this.deps.recorder.begin({ ...record.call, callId: newCallId() })
        : record;
      const code = codeName(error.error.code);
      this.metrics.refusals.inc({ code });
      spans.refused(code, error.error.rawMessage);
      spans.step("record");
      await recordRefusal(this.deps, filed, error, req, Date.now() - started);
      spans.end(CallStatus.REFUSED);
      throw new CallRefused(error.error, filed.call.callId, filed.call.traceId);
    }

    const key = ctx?.idempotencyKey ?? "";
    const execution: Execution = {
      checked,
      principal,
      record,
      started,
      options,
      requestTimeoutMs: req.timeoutMs,
      idempotencyKey: key,
      spans,
    };
    if (key === "") return this.execute(execution);
    const slot = `${principal.agentId}\u0000${key}`;
    const inflight = this.inflightKeys.get(slot);
    if (inflight) return this.replayed(spans, await inflight);
    const stored = await this.deps.idempotency.get(principal.agentId, key);
    if (stored) return this.replayed(spans, stored);
    const running = this.execute(execution);
    this.inflightKeys.set(slot, running);
    try {
      return await running;
    } finally {
      this.inflightKeys.delete(slot);
    }
  }

  private replayed(spans: CallSpans, response: DispatchResponse): DispatchResponse {
    spans.end(response.status);
    return replayed(response);
  }

  private async execute(call: Execution): Promise<DispatchResponse> {
    const { checked, principal, record, started, options, spans } = call;
    const { tool, args } = checked;
    const spec = tool.spec;
    const { settings, running } = this.deps;
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

    spans.step("execute");
    const startAcked = record.start({
      args,
      timeoutMs,
      runtime: spec.runtime?.kind.case ?? RuntimeKind[RuntimeKind.UNSPECIFIED],
      startedMs: started,
      deadlineMs: deadline,
    });
    if (spec.sideEffects) {
      // A tool that changes the world runs only once its start record is acked.
      try {
        await startAcked;
      } catch (error) {
        cleanup();
        throw new CallRefused(unrecorded(error, "start", spec.name), callId, traceId);
      }
    } else {
      // A read-only tool runs alongside its start record; flush() below still waits for it.
      startAcked.catch(() => {});
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
    try {
      if (!controller.signal.aborted) {
        ran = await runAttempts({
          tool,
          runtime: this.runtimeOf(spec.runtime?.kind.case),
          request,
          deadline,
          signal: controller.signal,
          record,
          onEvent: (event) => {
            traceBackendEvent(record, event);
            options.onEvent?.(event);
          },
          spans,
        });
      }
    } finally {
      cleanup();
    }

    const finished = Date.now();
    if (ran.attempts > 1) this.metrics.retries.inc({ tool: spec.name }, ran.attempts - 1);
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
      this.deps.recorder.maxPayload,
    );
    record.finished(end, {
      args,
      attempts: ran.attempts,
      startedMs: started,
      finishedMs: finished,
    });
    const response = create(DispatchResponseSchema, {
      callId,
      traceId,
      status: end.status,
      output: end.output,
      error: end.error,
      durationMs: finished - started,
      attempts: ran.attempts,
    });
    // The output goes back only once every record of the call is acked.
    try {
      await record.flush();
    } catch (error) {
      throw unrecorded(error, "outcome", spec.name);
    }
    record.release();
    if (call.idempotencyKey) {
      await this.deps.idempotency.put(principal.agentId, call.idempotencyKey, response);
    }
    const status = statusLabel(end.status);
    this.metrics.calls.inc({ tool: spec.name, status });
    this.metrics.duration.observe({ tool: spec.name, status }, (Date.now() - started) / 1000);
    spans.end(end.status);
    return response;
  }

  private runtimeOf(kind: string | undefined): ToolRuntime | undefined {
    const { runtimes } = this.deps;
    return kind === "grpc" ||
      kind === "local" ||
      kind === "remote" ||
      kind === "docker" ||
      kind === "mcp"
      ? runtimes[kind]
      : undefined;
  }
}

function replayed(response: DispatchResponse): DispatchResponse {
  return create(DispatchResponseSchema, { ...response, replayed: true });
}

/** A random W3C trace id. */
export function newTraceId(): string {
  return randomUUID().replaceAll("-", "");
}
