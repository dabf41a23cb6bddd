import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { invalidField, notFound } from "@toolmesh/errors";
import {
  type AuditService,
  CallStatus,
  GetTraceResponseSchema,
  QueryRecordsResponseSchema,
  VerifyChainResponseSchema,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import type { AuditLog, RecordFilter } from "./audit-log.js";
import { findChainBreak } from "./hash-chain.js";
import type { TraceReader } from "./trace-reader.js";

/** Record sequences are the page position of QueryRecords (newest first). */
const recordPages = pageTokens({ defaultSize: 100, maxSize: 1000, position: /^[1-9]\d{0,19}$/ });
const TRACE_ID = /^[0-9a-f]{32}$/;

/** The AuditService RPCs over the in-memory log index and the trace stream. */
export function createAuditHandlers(deps: {
  auditLog: AuditLog;
  traces: TraceReader;
}): ServiceImpl<typeof AuditService> {
  const { auditLog, traces } = deps;
  return {
    queryRecords(req, ctx) {
      requireRole(ctx, Role.Admin, Role.Auditor);
      const size = recordPages.pageSize(req.pageSize);
      if (!(req.status in CallStatus)) {
        throw invalidField("status", `unknown call status ${req.status}`);
      }
      const startMs = req.startTime ? timestampMs(req.startTime) : undefined;
      const endMs = req.endTime ? timestampMs(req.endTime) : undefined;
      if (startMs !== undefined && endMs !== undefined && startMs >= endMs) {
        throw invalidField(
          "end_time",
          "must be after start_time (start_time is inclusive, end_time exclusive); swap them or widen the range",
        );
      }
      const filter: RecordFilter = {
        agentId: req.agentId,
        userId: req.userId,
        tool: req.tool,
        status: req.status,
        traceId: req.traceId,
        callId: req.callId,
        startMs,
        endMs,
      };
      const fingerprint = recordPages.fingerprint([
        filter.agentId,
        filter.userId,
        filter.tool,
        filter.status,
        filter.traceId,
        filter.callId,
        filter.startMs ?? null,
        filter.endMs ?? null,
      ]);
      const before = BigInt(recordPages.decode(req.pageToken, fingerprint) || "0");
      const { records, more } = auditLog.query(filter, before, size);
      const last = records.at(-1);
      return create(QueryRecordsResponseSchema, {
        records,
        nextPageToken: more && last ? recordPages.encode(String(last.sequence), fingerprint) : "",
      });
    },

    async getTrace(req, ctx) {
      requireRole(ctx, Role.Admin, Role.Auditor);
      if (!TRACE_ID.test(req.traceId)) {
        throw invalidField(
          "trace_id",
          `expected a W3C trace id (32 lowercase hex characters); got ${JSON.stringify(req.traceId.slice(0, 64))}`,
        );
      }
      const events = await traces.events(req.traceId);
      if (events.length === 0) {
        throw notFound("trace", req.traceId, "no events were recorded for it, or they expired");
      }
      return create(GetTraceResponseSchema, { traceId: req.traceId, events });
    },

    verifyChain(req, ctx) {
      requireRole(ctx, Role.Admin, Role.Auditor);
      const result = findChainBreak(auditLog.from(req.fromSequence));
      if (!result.break) {
        return create(VerifyChainResponseSchema, {
          ok: true,
          recordsChecked: BigInt(result.checked),
        });
      }
      return create(VerifyChainResponseSchema, {
        ok: false,
        recordsChecked: BigInt(result.checked),
        firstBreakSequence: result.break.sequence,
        expectedHash: result.break.expectedHash,
        actualHash: result.break.actualHash,
        reason: result.break.reason,
      });
    },
  };
}
