import { randomUUID } from "node:crypto";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  codeName,
  invalidField,
  permissionDenied,
  toolNotFound,
  validationFailed,
} from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  AuditAction,
  type BackendEvent,
  CallErrorSchema,
  CallStatus,
  type Decision,
  type DispatchRequest,
  type DispatchResponse,
  DispatchResponseSchema,
  InvokeRequestSchema,
  type Principal,
  RuntimeKind,
  type Tool,
  ToolStatus,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallRecord, CallRecorder } from "./call-recorder.js";
import type { IdempotencyStore } from "./idempotency.js";
import type { InterruptReason, RunningCalls } from "./running-calls.js";
import type { AttemptResult, ToolRuntime } from "./runtimes/runtime.js";
import { SchemaCompileError, type ToolCatalog, toViolations } from "./tool-catalog.js";

/** The permission decision for a caller and a tool; PolicySnapshot from @toolmesh/policy. */
export interface PermissionGate {
  readonly isReady: boolean;
  decide(
    subject: { agentId: string; userId: string; roles: string[] },
    tool: { name: string; requiredScopes: string[]; groups: string[] },
    now?: Date,
  ): Decision;
}

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

const TRACE_ID = /^[0-9a-f]{32}$/;
const ZERO_TRACE_ID = "0".repeat(32);
const MAX_ID_LENGTH = 128;

/** Kinds a backend may emit; anything else is published as CUSTOM with its name. */
const BACKEND_KINDS = new Set([
  TraceEventKind.DATA_QUERY,
  TraceEventKind.DATA_RESULT,
  TraceEventKind.CUSTOM,
]);

/**
 * The whole tool-call chain: resolve, validate, authorise, trace, execute, record, reply.
 * Transport-free, so the Connect handlers and the grpc-js fast path share it.
 */
export class DispatchChain {
  private readonly policyTools = new WeakMap<
    Tool,
    { name: string; requiredScopes: string[]; groups: string[] }
  >();
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

  /** Tools the caller may use, nearest names to `requested` first. */
  availableTools(principal: Principal, requested: string): string[] {
    const { catalog, policy } = this.deps;
    const names: string[] = [];
    for (const tool of catalog.all()) {
      if (!tool.spec || tool.spec.status === ToolStatus.DISABLED) continue;
      if (policy.isReady && policy.decide(principal, this.policyTool(tool)).allowed)
        names.push(tool.spec.name);
    }
    const scored = names.map((name) => ({ name, distance: editDistance(requested, name) }));
    scored.sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name));
    return scored.map((s) => s.name);
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
    const record = this.deps.recorder.begin({
      traceId: TRACE_ID.test(traceId) ? traceId : newTraceId(),
      callId: callId.length <= MAX_ID_LENGTH ? callId : randomUUID(),
      parentId: ctx?.parentId ?? "",
      tool: req.tool,
      principal,
    });
    const refuse = async (error: ConnectError, reason: string): Promise<never> => {
      record.trace(TraceEventKind.TOOL_REFUSED, { code: codeName(error.code), reason });
      record.audit({
        action: AuditAction.TOOL_REFUSED,
        status: CallStatus.REFUSED,
        errorCode: codeName(error.code),
        errorMessage: error.rawMessage,
        reason,
        durationMs: Date.now() - started,
        attempts: 0,
        arguments: req.arguments,
      });
      try {
        await record.flush();
      } catch (flushError) {
        this.deps.log.error(
          { err: flushError, call_id: callId },
          "could not record a refused call",
        );
      }
      throw new CallRefused(error, record.call.callId, record.call.traceId);
    };

    if (ctx?.traceId && (!TRACE_ID.test(ctx.traceId) || ctx.traceId === ZERO_TRACE_ID)) {
      return refuse(
        invalidField(
          "context.trace_id",
          `"${ctx.traceId.slice(0, 40)}" is not a W3C trace id: expected 32 lowercase hex characters, not all zero; leave it empty to get one`,
        ),
        "bad trace_id",
      );
    }
    if (callId.length > MAX_ID_LENGTH) {
      return refuse(
        invalidField("context.call_id", `longer than ${MAX_ID_LENGTH} characters`),
        "bad call_id",
      );
    }
    if (this.deps.running.get(callId)) {
      return refuse(
        new ConnectError(
          `call "${callId}" is already running; give each call its own call_id (or leave it empty)`,
          Code.AlreadyExists,
        ),
        "duplicate call_id",
      );
    }
    if ((ctx?.idempotencyKey.length ?? 0) > 256) {
      return refuse(
        invalidField("context.idempotency_key", "longer than 256 characters"),
        "bad idempotency_key",
      );
    }
    if (req.tool === "") {
      return refuse(
        invalidField("tool", "name the tool to call, for example data.query"),
        "no tool named",
      );
    }
    const { catalog, policy } = this.deps;
    if (!catalog.isReady || !policy.isReady) {
      return refuse(
        new ConnectError(
          `the dispatcher has not loaded the ${catalog.isReady ? "permission grants" : "tool registry"} yet; retry in a moment`,
          Code.Unavailable,
        ),
        "snapshot not ready",
      );
    }

    const tool = catalog.get(req.tool);
    const spec = tool?.spec;
    if (!tool || !spec) {
      return refuse(
        toolNotFound(req.tool, this.availableTools(principal, req.tool)),
        "unknown tool",
      );
    }
    if (spec.status === ToolStatus.DISABLED) {
      return refuse(
        new ConnectError(
          `tool "${spec.name}" is disabled; pick another tool`,
          Code.FailedPrecondition,
        ),
        "tool disabled",
      );
    }

    let validators: ReturnType<ToolCatalog["validatorsOf"]>;
    try {
      validators = catalog.validatorsOf(tool);
    } catch (error) {
      if (!(error instanceof SchemaCompileError)) throw error;
      return refuse(
        new ConnectError(
          `tool "${spec.name}" has a schema that does not compile; tell its owner`,
          Code.FailedPrecondition,
        ),
        "schema does not compile",
      );
    }
    const args: JsonObject = req.arguments ?? {};
    if (validators.input && !validators.input(args)) {
      const violations = toViolations(validators.input.errors);
      return refuse(
        validationFailed(`arguments of tool "${spec.name}"`, violations),
        "arguments failed validation",
      );
    }

    const decision = policy.decide(principal, this.policyTool(tool));
    if (!decision.allowed) {
      return refuse(
        permissionDenied({
          resource: spec.name,
          reason: decision.reason,
          missingScopes: decision.missingScopes,
          denyGrantId: decision.denyGrantId,
          principal: decision.deniedPrincipal,
        }),
        decision.reason,
      );
    }

    const key = ctx?.idempotencyKey ?? "";
    if (key === "")
      return this.execute(tool, args, principal, record, started, options, req.timeoutMs);
    const slot = `${principal.agentId}\u0000${key}`;
    const inflight = this.inflightKeys.get(slot);
    if (inflight) return replayed(await inflight);
    const stored = await this.deps.idempotency.get(principal.agentId, key);
    if (stored) return replayed(stored);
    const running = this.execute(
      tool,
      args,
      principal,
      record,
      started,
      options,
      req.timeoutMs,
      key,
    );
    this.inflightKeys.set(slot, running);
    try {
      return await running;
    } finally {
      this.inflightKeys.delete(slot);
    }
  }

  private async execute(
    tool: Tool,
    args: JsonObject,
    principal: Principal,
    record: CallRecord,
    started: number,
    options: DispatchOptions,
    requestTimeoutMs: number,
    idempotencyKey = "",
  ): Promise<DispatchResponse> {
    const spec = tool.spec as NonNullable<Tool["spec"]>;
    const { settings, running } = this.deps;
    const { callId, traceId, parentId } = record.call;
    let timeoutMs = spec.timeoutMs || settings.defaultTimeoutMs;
    if (requestTimeoutMs > 0) timeoutMs = Math.min(timeoutMs, requestTimeoutMs);
    const rpcTimeoutMs = options.rpcTimeoutMs;
    if (rpcTimeoutMs !== undefined && rpcTimeoutMs > 0)
      timeoutMs = Math.min(timeoutMs, rpcTimeoutMs);
    timeoutMs = Math.max(1, Math.min(timeoutMs, settings.maxTimeoutMs));
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
      runtime: runtimeName(spec.runtime?.kind.case),
    });
    const runtime = this.runtimeOf(spec.runtime?.kind.case);
    const maxAttempts = spec.idempotent ? Math.max(1, spec.retryPolicy?.maxAttempts ?? 1) : 1;
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
    const onEvent = (event: BackendEvent) => {
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
    };

    let attempt = 0;
    let result: AttemptResult | undefined;
    try {
      while (attempt < maxAttempts) {
        attempt++;
        request.attempt = attempt;
        request.deadlineMs = Math.max(0, deadline - Date.now());
        result = runtime
          ? await runtime.invoke({ tool, request, signal: controller.signal, onEvent })
          : {
              ok: false,
              error: create(CallErrorSchema, {
                code: "backend_misconfigured",
                message: `tool "${spec.name}" has no runtime; its owner must register one`,
              }),
              transient: false,
            };
        if (controller.signal.aborted) break;
        const retrying = !result.ok && result.transient && attempt < maxAttempts;
        if (maxAttempts > 1 && (attempt > 1 || retrying)) {
          record.trace(TraceEventKind.TOOL_ATTEMPT, {
            attempt,
            ok: result.ok,
            ...(result.ok ? {} : { error_code: result.error.code, transient: result.transient }),
          });
        }
        if (!retrying) break;
        const policy = spec.retryPolicy;
        const base = Math.min(
          (policy?.initialBackoffMs || 100) * 2 ** (attempt - 1),
          policy?.maxBackoffMs || 5000,
        );
        const backoff = base / 2 + Math.random() * (base / 2);
        if (Date.now() + backoff >= deadline) break;
        await sleep(backoff, controller.signal);
        if (controller.signal.aborted) break;
      }
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onCallerGone);
      running.delete(callId);
    }

    const outputValidator = this.deps.catalog.validatorsOf(tool).output;
    const finished = Date.now();
    const durationMs = finished - started;
    let status: CallStatus;
    let output: JsonObject | undefined;
    let error: ReturnType<typeof create<typeof CallErrorSchema>> | undefined;
    let reason = "";
    if (controller.signal.aborted) {
      status = CallStatus.INTERRUPTED;
      reason = String(controller.signal.reason);
      error = create(CallErrorSchema, {
        code: reason,
        message:
          reason === "timeout"
            ? `tool "${spec.name}" did not finish within ${timeoutMs} ms; the call was stopped`
            : reason === "shutdown"
              ? "the dispatcher is shutting down; the call was stopped"
              : "the call was cancelled",
      });
    } else if (result?.ok) {
      if (result.pending) {
        status = CallStatus.PENDING;
      } else if (outputValidator && !outputValidator(result.output)) {
        const violations = toViolations(outputValidator.errors);
        status = CallStatus.FAILURE;
        error = create(CallErrorSchema, {
          code: "invalid_output",
          message: `tool "${spec.name}" returned output that violates its output schema:\n${violations
            .map((v) => `- ${v.path || "/"}: ${v.message}`)
            .join("\n")}`,
        });
      } else {
        status = CallStatus.SUCCESS;
        output = result.output;
      }
    } else {
      status = CallStatus.FAILURE;
      error = result?.error;
    }

    const statusName = CallStatus[status];
    record.trace(TraceEventKind.TOOL_RESULT, {
      status: statusName,
      duration_ms: durationMs,
      attempts: attempt,
      ...(error ? { error_code: error.code } : {}),
      ...(reason ? { reason } : {}),
    });
    record.audit({
      action: AuditAction.TOOL_CALL,
      status,
      errorCode: error?.code ?? "",
      errorMessage: error?.message ?? "",
      reason,
      durationMs,
      attempts: attempt,
      arguments: args,
    });
    record.outcome({
      callId,
      traceId,
      parentId,
      tool: spec.name,
      agentId: principal.agentId,
      userId: principal.userId,
      status,
      output,
      error,
      reason,
      durationMs,
      attempts: attempt,
      startedAt: timestampFromMs(started),
      finishedAt: timestampFromMs(finished),
    });
    const response = create(DispatchResponseSchema, {
      callId,
      traceId,
      status,
      output,
      error,
      durationMs,
      attempts: attempt,
    });
    if (idempotencyKey) {
      await Promise.all([
        record.flush(),
        this.deps.idempotency.put(principal.agentId, idempotencyKey, response),
      ]);
    } else {
      await record.flush();
    }
    return response;
  }

  private runtimeOf(kind: string | undefined): ToolRuntime | undefined {
    const { runtimes } = this.deps;
    return kind === "grpc"
      ? runtimes.grpc
      : kind === "local"
        ? runtimes.local
        : kind === "remote"
          ? runtimes.remote
          : undefined;
  }

  private policyTool(tool: Tool) {
    let cached = this.policyTools.get(tool);
    if (!cached) {
      cached = {
        name: tool.spec?.name ?? "",
        requiredScopes: tool.spec?.requiredScopes ?? [],
        groups: tool.groups,
      };
      this.policyTools.set(tool, cached);
    }
    return cached;
  }
}

function replayed(response: DispatchResponse): DispatchResponse {
  return create(DispatchResponseSchema, { ...response, replayed: true });
}

function runtimeName(kind: string | undefined): string {
  return kind ?? RuntimeKind[RuntimeKind.UNSPECIFIED];
}

/** A random W3C trace id. */
export function newTraceId(): string {
  return randomUUID().replaceAll("-", "");
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

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length] as number;
}
