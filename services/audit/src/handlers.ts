import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ChainBreak } from "@toolmesh/archive";
import { hasRole, principalOf, Role, requireRole } from "@toolmesh/auth";
import { invalidField, notFound } from "@toolmesh/errors";
import { checkLength, isTraceId } from "@toolmesh/names";
import {
  type AuditService,
  CallStatus,
  GetCallResponseSchema,
  GetTraceResponseSchema,
  QueryRecordsResponseSchema,
  VerifyChainResponseSchema,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import type { CallReaders } from "./call-readers.js";
import type { RecordFilter, RecordIndex } from "./record-index.js";
import type { StoredRecords } from "./stored-records.js";

/** Record sequences are the page position of QueryRecords (newest first). */
const recordPages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: /^[1-9]\d{0,19}$/,
  maxPositionLength: 20,
});

/** What the AuditService RPCs read: the query index, the chain and the views of calls. */
export interface AuditReaders {
  records: RecordIndex;
  /** Verifies the chain from a sequence (0n: from the oldest kept record). */
  verifyChain(fromSequence: bigint): Promise<{ checked: number; break?: ChainBreak }>;
  /** Where the records the index points at are read from. */
  stored: Pick<StoredRecords, "read">;
  calls: CallReaders;
}

/** The AuditService RPCs over the query index, the log stream and the trace stream. */
export function createAuditHandlers(deps: AuditReaders): ServiceImpl<typeof AuditService> {
  const { records: index, calls } = deps;
  return {
    async queryRecords(req, ctx) {
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
      const before = Number(recordPages.decode(req.pageToken, fingerprint) || "0");
      const { rows, more } = index.query(filter, before, size);
      const last = rows.at(-1);
      return create(QueryRecordsResponseSchema, {
        records: await deps.stored.read(rows),
        nextPageToken: more && last ? recordPages.encode(String(last.seq), fingerprint) : "",
      });
    },

    async getTrace(req, ctx) {
      requireRole(ctx, Role.Admin, Role.Auditor);
      if (!isTraceId(req.traceId)) {
        throw invalidField(
          "trace_id",
          `expected a W3C trace id (32 lowercase hex characters, not all zero); got ${JSON.stringify(req.traceId.slice(0, 64))}`,
        );
      }
      const events = await calls.traceEvents(req.traceId);
      if (events.length === 0) {
        throw notFound("trace", req.traceId, "no events were recorded for it, or they expired");
      }
      return create(GetTraceResponseSchema, { traceId: req.traceId, events });
    },

    async getCall(req, ctx) {
      const caller = principalOf(ctx);
      if (req.callId === "") throw invalidField("call_id", "name the call whose records you want");
      checkLength("call_id", "callId", req.callId);
      const records = await calls.callRecords(req.callId, req.wait);
      // Another agent's call answers as an unknown one does: a call id reveals nothing.
      const own = hasRole(caller, Role.Admin, Role.Auditor, Role.Service);
      if (records.length === 0 || (!own && records[0]?.agentId !== caller.agentId))
        throw notFound(
          "call",
          req.callId,
          "no record of it is kept: it was never made, is another agent's, or its records have expired",
        );
      return create(GetCallResponseSchema, { records });
    },

    async verifyChain(req, ctx) {
      requireRole(ctx, Role.Admin, Role.Auditor);
      const result = await deps.verifyChain(req.fromSequence);
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
