import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  AuditAction,
  type AuditRecord,
  type BackendEvent,
  CallStatus,
  isFinal,
  statusName,
  statusWord,
  type TraceEvent,
  TraceEventKind,
  TraceEventSchema,
} from "@toolmesh/proto";
import { recordKey, startsCall } from "./record-keys.js";

/** The CALLBACK_* kind that announces a final status. */
const CALLBACK_KIND: Partial<Record<CallStatus, TraceEventKind>> = {
  [CallStatus.SUCCESS]: TraceEventKind.CALLBACK_SUCCESS,
  [CallStatus.FAILURE]: TraceEventKind.CALLBACK_FAILURE,
  [CallStatus.INTERRUPTED]: TraceEventKind.CALLBACK_INTERRUPTED,
  [CallStatus.REFUSED]: TraceEventKind.CALLBACK_REFUSED,
};

/**
 * A trace's events, derived from its calls' records in chain order — the view GetTrace and
 * `toolmesh trace` show: TOOL_EXECUTE from a start record; the tool's own events and attempts,
 * TOOL_RESULT and the CALLBACK_* of its final status from its end record; TOOL_REFUSED from a
 * refusal; the approval events of a held call. A call Audit chained as one record (its start
 * and end together) gives both parts. Nothing else keeps a second copy of them.
 */
export function traceEvents(records: readonly AuditRecord[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  const sequences = new Map<string, number>();
  for (const record of records) {
    const emit = (
      kind: TraceEventKind,
      payload: JsonObject,
      extra: { time?: Timestamp | undefined; customKind?: string; source?: string } = {},
    ) => {
      const sequence = (sequences.get(record.callId) ?? 0) + 1;
      sequences.set(record.callId, sequence);
      out.push(
        create(TraceEventSchema, {
          id: `${recordKey(record)}/${sequence}`,
          traceId: record.traceId,
          callId: record.callId,
          parentId: record.parentId,
          kind,
          customKind: extra.customKind ?? "",
          tool: record.tool,
          agentId: record.agentId,
          userId: record.userId,
          time: extra.time ?? record.time,
          sequence,
          payload,
          source: extra.source ?? record.source,
        }),
      );
    };
    const ownEvents = (events: readonly BackendEvent[]) => {
      for (const event of events)
        emit(event.kind, event.payload ?? {}, { time: event.time, customKind: event.customKind });
    };
    switch (record.action) {
      case AuditAction.TOOL_START:
        emit(TraceEventKind.TOOL_EXECUTE, {
          timeout_ms: record.timeoutMs,
          runtime: record.runtime,
        });
        break;
      case AuditAction.TOOL_CALL:
        // A call that ended soon after it started is one record (Audit chains its start and end
        // together): the start's part is there too.
        if (startsCall(record))
          emit(
            TraceEventKind.TOOL_EXECUTE,
            { timeout_ms: record.timeoutMs, runtime: record.runtime },
            { time: record.startedAt ?? record.time },
          );
        ownEvents(record.events);
        // A held call that ended without running has no result of its own, only its outcome.
        if (record.status !== CallStatus.REFUSED)
          emit(TraceEventKind.TOOL_RESULT, {
            status: statusName(record.status),
            duration_ms: record.durationMs,
            attempts: record.attempts,
            ...(record.errorCode ? { error_code: record.errorCode } : {}),
            ...(record.reason ? { reason: record.reason } : {}),
          });
        if (isFinal(record.status)) emitCallback(emit, record);
        break;
      case AuditAction.TOOL_REPORTED:
        emitCallback(emit, record);
        break;
      case AuditAction.TOOL_REFUSED:
        emit(TraceEventKind.TOOL_REFUSED, { code: record.errorCode, reason: record.reason });
        break;
      case AuditAction.APPROVAL_REQUESTED:
      case AuditAction.APPROVAL_DECIDED:
        ownEvents(record.events);
        break;
      default:
        break;
    }
  }
  return out;
}

/** The CALLBACK_* event of a final status, as Callback announces it. */
function emitCallback(
  emit: (kind: TraceEventKind, payload: JsonObject, extra?: { source?: string }) => void,
  record: AuditRecord,
): void {
  const kind = CALLBACK_KIND[record.status];
  if (kind === undefined) return;
  emit(
    kind,
    {
      status: statusWord(record.status),
      duration_ms: record.durationMs,
      attempts: record.attempts,
      ...(record.errorCode ? { error_code: record.errorCode } : {}),
      ...(record.reason ? { reason: record.reason } : {}),
    },
    { source: "callback" },
  );
}
