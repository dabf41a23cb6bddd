import { create } from "@bufbuild/protobuf";
import { ConnectError, codeName } from "@toolmesh/errors";
import { callFields } from "@toolmesh/log";
import { newCallId, newTraceId } from "@toolmesh/names";
import {
  CallErrorSchema,
  CallStatus,
  type DispatchRequest,
  type DispatchResponse,
  DispatchResponseSchema,
  type HeldCall,
  type Principal,
} from "@toolmesh/proto";
import { parseTraceparent, type Tracing, untraced } from "@toolmesh/telemetry";
import { MemoryHeldCalls } from "../records/held-calls.js";
import { claimCallId, recordIdentity } from "./call-ids.js";
import { checkCall, requireSecrets } from "./checks.js";
import { executeCall } from "./execution.js";
import { heldPrincipal, holdCall } from "./hold.js";
import { checkRecordable, recordRefusal } from "./recording-gate.js";
import { CallRefused, Refusal } from "./refusal.js";
import { CallSpans, dispatcherMetrics } from "./telemetry.js";
import type { ChainDeps, CheckedCall, DispatchOptions, Execution } from "./types.js";

/**
 * The whole tool-call chain: check, trace, execute, record, reply. Transport-free, so the
 * Connect handlers and the grpc-js port share it.
 */
export class DispatchChain {
  private readonly inflightKeys = new Map<string, Promise<DispatchResponse>>();
  private readonly metrics = dispatcherMetrics();
  private readonly tracing: Tracing;
  private readonly approvals: NonNullable<ChainDeps["approvals"]>;

  constructor(private readonly deps: ChainDeps) {
    this.tracing = deps.tracing ?? untraced();
    this.approvals = deps.approvals ?? {
      store: new MemoryHeldCalls(),
      settings: { holdMs: 60 * 60 * 1000, approverRoles: ["approver"] },
    };
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
    const callId = ctx?.callId || options.callId || newCallId();
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

    let checked: CheckedCall | undefined;
    try {
      if (options.refusal) throw options.refusal;
      spans.step("resolve");
      checked = checkCall(this.deps, req, principal, callId, (step) => spans.step(step));
      checkRecordable(this.deps.recorder, checked);
      if (this.deps.secrets && checked.tool.spec.secrets.length > 0)
        await requireSecrets(this.deps.secrets, checked.tool, principal);
      // A call id the Dispatcher made is this call's alone; one a caller chose must be claimed.
      if (ctx?.callId) await claimCallId(this.deps.callIds, record.call.callId, principal);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      this.unprobe(checked);
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
    if (inflight) {
      this.unprobe(checked);
      return this.replayed(spans, await inflight);
    }
    const stored = await this.deps.idempotency.get(principal.agentId, key);
    if (stored) {
      this.unprobe(checked);
      return this.replayed(spans, stored);
    }
    const running = this.execute(execution);
    this.inflightKeys.set(slot, running);
    try {
      return await running;
    } finally {
      this.inflightKeys.delete(slot);
    }
  }

  /** A breaker's probe that will not run after all: the next call may probe. */
  private unprobe(checked: CheckedCall | undefined): void {
    if (checked?.probe) this.deps.breakers?.unprobe(checked.tool.spec.name);
  }

  private replayed(spans: CallSpans, response: DispatchResponse): DispatchResponse {
    spans.end(response.status);
    return replayed(response);
  }

  /**
   * Runs a held call that an approver approved, with `checked` from the checks it passed again;
   * `onStarted` hears that its start record is acked (the call no longer needs its hold).
   */
  runApproved(
    held: HeldCall,
    checked: CheckedCall,
    onStarted: () => void,
  ): Promise<DispatchResponse> {
    const a = held.approval;
    const principal = heldPrincipal(held);
    const record = this.deps.recorder.begin({
      traceId: a?.traceId ?? "",
      callId: a?.callId ?? "",
      parentId: held.parentId,
      tool: checked.tool.spec.name,
      principal,
    });
    return this.execute({
      checked,
      principal,
      record,
      started: Date.now(),
      options: {},
      requestTimeoutMs: held.timeoutMs,
      idempotencyKey: held.idempotencyKey,
      spans: new CallSpans(this.tracing, { ...record.call, agentId: principal.agentId }, {}),
      approved: { onStarted },
    });
  }

  /**
   * Holds a call that needs approval or its caller's confirmation; the reply is PENDING with
   * `approval_expires_at`.
   */
  private async hold(call: Execution): Promise<DispatchResponse> {
    const { record, spans, principal } = call;
    let response: DispatchResponse;
    try {
      response = await holdCall(this.approvals.store, this.approvals.settings, {
        ...call,
        startedMs: call.started,
      });
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      throw new CallRefused(error, record.call.callId, record.call.traceId);
    }
    if (call.idempotencyKey)
      await this.deps.idempotency.put(principal.agentId, call.idempotencyKey, response);
    this.deps.log.info(
      { ...callFields(response), tool: record.call.tool },
      "call held for approval",
    );
    spans.end(CallStatus.PENDING);
    return response;
  }

  private execute(call: Execution): Promise<DispatchResponse> {
    const { approvalBy, confirmationBy } = call.checked;
    if ((approvalBy.length > 0 || confirmationBy.length > 0) && !call.approved) {
      this.unprobe(call.checked);
      return this.hold(call);
    }
    return executeCall(this.deps, this.metrics, call);
  }
}

function replayed(response: DispatchResponse): DispatchResponse {
  return create(DispatchResponseSchema, { ...response, replayed: true });
}
