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
  TraceEventKind,
} from "@toolmesh/proto";
import { runAttempts } from "./attempts.js";
import {
  type CheckedCall,
  checkCall,
  claimCallId,
  type PermissionGate,
  Refusal,
  recordIdentity,
} from "./call-checks.js";
import type { CallRecord, CallRecorder } from "./call-recorder.js";
import type { CallIdOwners, IdempotencyStore } from "./idempotency.js";
import { classify } from "./outcome.js";
import type { InterruptReason, RunningCalls } from "./running-calls.js";
import type { ToolRuntime } from "./runtimes/runtime.js";
import type { ToolCatalog } from "./tool-catalog.js";

export type { PermissionGate } from "./call-checks.js";

export interface ChainSettings {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
}

export interface ChainDeps {
  catalog: ToolCatalog;
  policy: PermissionGate;
  recorder: CallRecorder;
  runtimes: { grpc: ToolRuntime; local: ToolRuntime; remote: ToolRuntime };
  idempotency: IdempotencyStore;
  callIds: CallIdOwners;
  running: RunningCalls;
  settings: ChainSettings;
  log: Logger;
}

/** Per-call options that come from the transport. */
export interface DispatchOptions {
  /** Milliseconds left before the RPC's own deadline, if it has one. */
  rpcTimeoutMs?: number | undefined;
  /** Aborted when the caller goes away. */
  signal?: AbortSignal | undefined;
  /** Trace id shared by a batch, used when the call has none. */
  batchTraceId?: string;
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
}

/** Kinds a backend may emit; anything else is published as CUSTOM with its name. */
const BACKEND_KINDS = new Set([
  TraceEventKind.DATA_QUERY,
  TraceEventKind.DATA_RESULT,
  TraceEventKind.CUSTOM,
]);

/**
 * The whole tool-call chain: check, trace, execute, record, reply. Transport-free, so the
 * Connect handlers and the grpc-js port share it.
 */
export class DispatchChain {
  private readonly inflightKeys = new Map<string, Promise<DispatchResponse>>();

  constructor(private readonly deps: ChainDeps) {}

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
    const ctx = req.context;
    const callId = ctx?.callId || randomUUID();
    const traceId = ctx?.traceId || options.batchTraceId || newTraceId();
    // Records are filed under valid ids even when the request's are not (it is refused).
    const record = this.deps.recorder.begin(
      recordIdentity(
        { traceId, callId, parentId: ctx?.parentId ?? "", tool: req.tool, principal },
        newTraceId,
      ),
    );

    let checked: CheckedCall;
    try {
      checked = checkCall(this.deps, req, principal, callId);
      await claimCallId(this.deps.callIds, record.call.callId, principal);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      // Another call's id: the refusal is filed under a fresh id, so that call is left alone.
      const filed = error.foreignCallId
        ? this.deps.recorder.begin({ ...record.call, callId: randomUUID() })
        : record;
      await this.refuse(filed, error, req, Date.now() - started);
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
    };
    if (key === "") return this.execute(execution);
    const slot = `${principal.agentId}\u0000${key}`;
    const inflight = this.inflightKeys.get(slot);
    if (inflight) return replayed(await inflight);
    const stored = await this.deps.idempotency.get(principal.agentId, key);
    if (stored) return replayed(stored);
    const running = this.execute(execution);
    this.inflightKeys.set(slot, running);
    try {
      return await running;
    } finally {
      this.inflightKeys.delete(slot);
    }
  }

  /** Records a refusal and waits for its acks; a failed record is logged, the refusal stands. */
  private async refuse(
    record: CallRecord,
    refusal: Refusal,
    req: DispatchRequest,
    durationMs: number,
  ): Promise<void> {
    const { error, reason } = refusal;
    record.refused(
      { code: codeName(error.code), message: error.rawMessage, reason },
      req.arguments,
      durationMs,
    );
    try {
      await record.flush();
    } catch (flushError) {
      this.deps.log.error(
        { err: flushError, call_id: record.call.callId, trace_id: record.call.traceId },
        "could not record a refused call",
      );
    }
  }

  private async execute(call: Execution): Promise<DispatchResponse> {
    const { checked, principal, record, started, options } = call;
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

    record.trace(TraceEventKind.TOOL_EXECUTE, {
      timeout_ms: timeoutMs,
      runtime: spec.runtime?.kind.case ?? RuntimeKind[RuntimeKind.UNSPECIFIED],
    });
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
    let ran: Awaited<ReturnType<typeof runAttempts>>;
    try {
      ran = await runAttempts({
        tool,
        runtime: this.runtimeOf(spec.runtime?.kind.case),
        request,
        deadline,
        signal: controller.signal,
        record,
        onEvent: (event) => traceBackendEvent(record, event),
      });
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onCallerGone);
      running.delete(callId);
    }

    const finished = Date.now();
    const end = classify({
      tool: spec.name,
      interrupted: controller.signal.aborted
        ? (String(controller.signal.reason) as InterruptReason)
        : undefined,
      result: ran.result,
      output: checked.validators.output,
      timeoutMs,
    });
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
    await Promise.all([
      record.flush(),
      call.idempotencyKey
        ? this.deps.idempotency.put(principal.agentId, call.idempotencyKey, response)
        : undefined,
    ]);
    return response;
  }

  private runtimeOf(kind: string | undefined): ToolRuntime | undefined {
    const { runtimes } = this.deps;
    return kind === "grpc" || kind === "local" || kind === "remote" ? runtimes[kind] : undefined;
  }
}

/** The tool's timeout, narrowed by the request's and the RPC deadline, within the limits. */
function effectiveTimeout(
  settings: ChainSettings,
  toolTimeoutMs: number,
  requestTimeoutMs: number,
  rpcTimeoutMs: number | undefined,
): number {
  let timeoutMs = toolTimeoutMs || settings.defaultTimeoutMs;
  if (requestTimeoutMs > 0) timeoutMs = Math.min(timeoutMs, requestTimeoutMs);
  if (rpcTimeoutMs !== undefined && rpcTimeoutMs > 0) timeoutMs = Math.min(timeoutMs, rpcTimeoutMs);
  return Math.max(1, Math.min(timeoutMs, settings.maxTimeoutMs));
}

/** A backend's own trace event (DATA_QUERY …), filed under the call. */
function traceBackendEvent(record: CallRecord, event: BackendEvent): void {
  const kind = BACKEND_KINDS.has(event.kind) ? event.kind : TraceEventKind.CUSTOM;
  record.trace(kind, event.payload ?? {}, {
    customKind:
      kind === TraceEventKind.CUSTOM
        ? event.customKind || TraceEventKind[event.kind] || "CUSTOM"
        : "",
    ...(event.time
      ? { timeMs: Number(event.time.seconds) * 1000 + Math.floor(event.time.nanos / 1e6) }
      : {}),
  });
}

function replayed(response: DispatchResponse): DispatchResponse {
  return create(DispatchResponseSchema, { ...response, replayed: true });
}

/** A random W3C trace id. */
export function newTraceId(): string {
  return randomUUID().replaceAll("-", "");
}
