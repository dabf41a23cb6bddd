import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { hasRole, type Principal, principalOf, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import { type SnapshotView, subjectToken } from "@toolmesh/nats";
import {
  type CallbackService,
  CallStatus,
  GetOutcomeResponseSchema,
  isFinal,
  statusWord,
  type ToolSchema,
  WatchResponseSchema,
} from "@toolmesh/proto";
import { type CallRecords, callState, noOutcome } from "./call-state.js";
import { createReport, type ReportWriter } from "./report.js";
import { getUsage } from "./usage-query.js";
import type { UsageStore } from "./usage-store.js";
import type { Watches } from "./watches.js";

/** May see every call, not only their own. */
const seesAll = (p: Principal) => hasRole(p, Role.Admin, Role.Service);

function checkOwner(
  p: Principal,
  call: { callId: string; agentId: string },
  ctx: HandlerContext,
): void {
  if (!seesAll(p) && call.agentId !== p.agentId) {
    throw new ConnectError(
      `call "${call.callId}" belongs to another agent; ${ctx.method.name} shows only your own calls`,
      Code.PermissionDenied,
    );
  }
}

/** The CallbackService RPCs over the calls' records, the record stream and the broadcasts. */
export function createCallbackHandlers(deps: {
  /** A call's records, from the audit log. */
  calls: CallRecords;
  /** Where a report's record is written. */
  reports: ReportWriter;
  watches: Watches;
  /** The Registry's tools, for the reporters of a tool (a followed snapshot). */
  tools: SnapshotView<typeof ToolSchema>;
  /** Hourly usage aggregates (GetUsage). */
  usage: UsageStore;
  log: Logger;
}): ServiceImpl<typeof CallbackService> {
  const { calls, watches } = deps;
  const report = createReport({
    calls,
    writer: deps.reports,
    tools: deps.tools,
    log: deps.log,
  });

  return {
    report(req, ctx) {
      return report(requireRole(ctx, Role.ToolBackend, Role.Admin), req);
    },

    async getOutcome(req, ctx) {
      const p = principalOf(ctx);
      if (req.callId === "") throw invalidField("call_id", "is required");
      checkLength("call_id", "callId", req.callId);
      const state = callState(req.callId, await calls.read(req.callId));
      if (state.first) checkOwner(p, state.first, ctx);
      if (!state.outcome) throw noOutcome(state);
      return create(GetOutcomeResponseSchema, { event: state.outcome });
    },

    getUsage(req, ctx) {
      return getUsage(deps.usage, principalOf(ctx), req);
    },

    async *watch(req, ctx) {
      const p = principalOf(ctx);
      if (req.callId !== "") {
        checkLength("call_id", "callId", req.callId);
        for await (const event of watches.call(p, req.callId, ctx, (c) => checkOwner(p, c, ctx)))
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
