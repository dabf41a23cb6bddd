import { create } from "@bufbuild/protobuf";
import { timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { hasRole, type Principal, principalOf, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { callFields, type Logger } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import {
  buckets,
  publishEvent,
  type SnapshotView,
  subjects,
  subjectToken,
  updateWithRetry,
} from "@toolmesh/nats";
import {
  awaitsApproval,
  type CallbackEvent,
  CallbackEventSchema,
  type CallbackService,
  CallStatus,
  GetOutcomeResponseSchema,
  isFinal,
  OutcomeSchema,
  type ReportRequest,
  ReportResponseSchema,
  statusName,
  statusWord,
  type ToolSchema,
  WatchResponseSchema,
} from "@toolmesh/proto";
import type { JetStreamClient } from "nats";
import { findCall } from "./call-lookup.js";
import type { CallStore } from "./call-store.js";
import { sameResult } from "./normalise.js";
import type { OutcomeHistory } from "./outcome-history.js";
import { getUsage } from "./usage-query.js";
import type { UsageStore } from "./usage-store.js";
import type { Watches } from "./watches.js";

/** May see every call, not only their own. */
const seesAll = (p: Principal) => hasRole(p, Role.Admin, Role.Service);

function checkOwner(p: Principal, event: CallbackEvent, ctx: HandlerContext): void {
  if (!seesAll(p) && event.agentId !== p.agentId) {
    throw new ConnectError(
      `call "${event.callId}" belongs to another agent; ${ctx.method.name} shows only your own calls`,
      Code.PermissionDenied,
    );
  }
}

/**
 * Report is for admins and for the backend of the call's tool: a `tool-backend` principal whose
 * agent id the tool lists in `reporters`. PERMISSION_DENIED otherwise, naming what is missing.
 */
function checkReporter(
  p: Principal,
  event: CallbackEvent,
  tools: SnapshotView<typeof ToolSchema>,
): void {
  if (hasRole(p, Role.Admin)) return;
  if (!hasRole(p, Role.ToolBackend))
    throw new ConnectError(
      `Report needs the role admin or tool-backend; your token has ${p.roles.length ? `the roles ${p.roles.join(", ")}` : "no roles"}`,
      Code.PermissionDenied,
    );
  if (!tools.isReady)
    throw new ConnectError(
      "the tool registry is not loaded yet on this server; retry shortly",
      Code.Unavailable,
    );
  const reporters = tools.get(buckets.registry.toolKey(event.tool))?.spec?.reporters ?? [];
  if (!reporters.includes(p.agentId))
    throw new ConnectError(
      `agent "${p.agentId}" does not serve tool "${event.tool}": an admin lists the backend's agent id in the tool's reporters`,
      Code.PermissionDenied,
    );
}

/** The CallbackService RPCs over the call store and NATS. */
export function createCallbackHandlers(deps: {
  calls: CallStore;
  /** Finished calls whose key has left the bucket. */
  history: OutcomeHistory;
  watches: Watches;
  /** The Registry's tools, for the reporters of a tool (a followed snapshot). */
  tools: SnapshotView<typeof ToolSchema>;
  /** Hourly usage aggregates (GetUsage). */
  usage: UsageStore;
  js: JetStreamClient;
  log: Logger;
}): ServiceImpl<typeof CallbackService> {
  const { calls, history, watches, js, log } = deps;

  const reported = (req: ReportRequest, pending: CallbackEvent): CallbackEvent => {
    const now = timestampNow();
    const waited = pending.time ? Math.max(0, Date.now() - timestampMs(pending.time)) : 0;
    return create(CallbackEventSchema, {
      ...pending,
      status: req.status,
      output: req.status === CallStatus.SUCCESS ? (req.output ?? {}) : undefined,
      error: req.status === CallStatus.FAILURE ? req.error : undefined,
      reason: req.status === CallStatus.INTERRUPTED ? req.reason || "unknown" : "",
      durationMs: pending.durationMs + waited,
      time: now,
    });
  };

  /** Hands the settled call to the outcome stream, where the broadcaster picks it up. */
  const publishOutcome = (event: CallbackEvent) =>
    publishEvent(
      js,
      subjects.outcome("callback", event.callId),
      OutcomeSchema,
      create(OutcomeSchema, {
        callId: event.callId,
        traceId: event.traceId,
        parentId: event.parentId,
        tool: event.tool,
        agentId: event.agentId,
        userId: event.userId,
        status: event.status,
        output: event.output,
        error: event.error,
        reason: event.reason,
        durationMs: event.durationMs,
        attempts: event.attempts,
        finishedAt: event.time,
        source: "backend",
      }),
      { msgId: `${event.callId}:report` },
    );

  return {
    async report(req, ctx) {
      const caller = requireRole(ctx, Role.ToolBackend, Role.Admin);
      if (req.callId === "") throw invalidField("call_id", "is required");
      checkLength("call_id", "callId", req.callId);
      if (!isFinal(req.status) || req.status === CallStatus.REFUSED) {
        throw invalidField("status", "must be SUCCESS, FAILURE or INTERRUPTED");
      }
      if (req.status === CallStatus.FAILURE && !req.error?.code) {
        throw invalidField("error.code", "is required for a FAILURE report, such as backend_error");
      }
      return updateWithRetry(`call "${req.callId}"`, async () => {
        const found = await findCall(calls, history, req.callId);
        if (!found) {
          throw notFound(
            "call",
            req.callId,
            "only calls accepted as PENDING by an asynchronous tool can be reported",
          );
        }
        checkReporter(caller, found.event, deps.tools);
        if (!found.live) {
          // Finished and broadcast long ago: only the same result again is answered.
          if (!sameResult(found.event, reported(req, found.event)))
            throw finishedAlready(req.callId, found.event);
          return create(ReportResponseSchema, { event: found.event, duplicate: true });
        }
        const stored = found.live;
        if (awaitsApproval(stored.event))
          throw new ConnectError(
            `call "${req.callId}" is held for approval and has not run; only its approval decides it (DispatcherService.DecideApproval)`,
            Code.FailedPrecondition,
          );
        const event = reported(req, stored.event);
        if (isFinal(stored.event.status)) {
          if (!sameResult(stored.event, event)) throw finishedAlready(req.callId, stored.event);
          // The first report may have been stored but not yet handed on; doing it again is safe.
          await publishOutcome(stored.event);
          return create(ReportResponseSchema, { event: stored.event, duplicate: true });
        }
        await calls.update(event, stored.revision);
        await publishOutcome(event);
        log.info(
          { ...callFields(event), status: statusWord(event.status) },
          "asynchronous call reported",
        );
        return create(ReportResponseSchema, { event, duplicate: false });
      });
    },

    async getOutcome(req, ctx) {
      const p = principalOf(ctx);
      if (req.callId === "") throw invalidField("call_id", "is required");
      checkLength("call_id", "callId", req.callId);
      const found = await findCall(calls, history, req.callId);
      if (!found) {
        throw notFound(
          "call",
          req.callId,
          `no outcome is stored for it: it was never made, has not been accepted yet, or finished more than ${retentionWords(calls.retention.ttlMs)} ago (outcomes expire after TOOLMESH_CALLBACK_TTL_DAYS, or sooner once the callback stream leaves them: TOOLMESH_STREAM_MAX_AGE_DAYS, TOOLMESH_CALLBACK_STREAM_MAX_BYTES; the audit log keeps the call's records)`,
        );
      }
      checkOwner(p, found.event, ctx);
      return create(GetOutcomeResponseSchema, { event: found.event });
    },

    getUsage(req, ctx) {
      return getUsage(deps.usage, principalOf(ctx), req);
    },

    async *watch(req, ctx) {
      const p = principalOf(ctx);
      if (req.callId !== "") {
        checkLength("call_id", "callId", req.callId);
        for await (const event of watches.call(p, req.callId, ctx, (e) => checkOwner(p, e, ctx)))
          yield create(WatchResponseSchema, { event });
        return;
      }
      if (req.agentId === "" && req.tool === "" && req.status === CallStatus.UNSPECIFIED) {
        throw invalidField("call_id", "set call_id, or at least one of agent_id, tool and status");
      }
      if (req.status !== CallStatus.UNSPECIFIED && !isFinal(req.status)) {
        throw invalidField("status", "must be SUCCESS, FAILURE, INTERRUPTED or REFUSED");
      }
      if (!seesAll(p) && req.agentId !== "" && req.agentId !== p.agentId) {
        throw new ConnectError(
          `you may watch only your own calls (agent_id "${p.agentId}"), not those of "${req.agentId}"`,
          Code.PermissionDenied,
        );
      }
      const filter = {
        agentId: seesAll(p) ? req.agentId : p.agentId,
        status: req.status ? statusWord(req.status) : "*",
        tool: req.tool ? subjectToken(req.tool) : "*",
      };
      for await (const event of watches.matching(p, filter, ctx))
        yield create(WatchResponseSchema, { event });
    },
  };
}

/** FAILED_PRECONDITION for a report that would change a finished call. */
function finishedAlready(callId: string, event: CallbackEvent): ConnectError {
  return new ConnectError(
    `call "${callId}" already finished with ${statusName(event.status)}; a report cannot change a finished call`,
    Code.FailedPrecondition,
  );
}

/** A retention in words: "7 days", "90 seconds". */
function retentionWords(ms: number): string {
  const day = 24 * 60 * 60 * 1000;
  if (ms % day === 0) return `${ms / day} day${ms === day ? "" : "s"}`;
  return `${Math.round(ms / 1000)} seconds`;
}
