import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { AuditAction, type AuditRecord, AuditRecordSchema, CallStatus } from "@toolmesh/proto";

/** Why a call that never recorded its end is closed by Audit. */
export type InterruptedReason = "dispatcher_lost" | "records_lost";

/** What Audit knows of a call it closes: its start record, or an earlier version's lease. */
export interface OpenCall {
  callId: string;
  traceId: string;
  parentId: string;
  tool: string;
  agentId: string;
  userId: string;
  roles: string[];
  startedAt?: Timestamp | undefined;
}

/**
 * The INTERRUPTED end record of a call left open: the one status everything derived from the
 * log tells, with a message that says what is unknown and what to check before a retry.
 */
export function interruptedEnd(
  call: OpenCall,
  reason: InterruptedReason,
  now: number,
): AuditRecord {
  const startedMs = call.startedAt ? timestampMs(call.startedAt) : now;
  return create(AuditRecordSchema, {
    time: timestampFromMs(now),
    action: AuditAction.TOOL_CALL,
    tool: call.tool,
    agentId: call.agentId,
    userId: call.userId,
    roles: call.roles,
    callId: call.callId,
    traceId: call.traceId,
    parentId: call.parentId,
    status: CallStatus.INTERRUPTED,
    errorCode: reason,
    errorMessage:
      reason === "dispatcher_lost"
        ? `the Dispatcher running call ${call.callId} stopped before the call ended; whether tool "${call.tool}" finished is unknown, so check its own state before retrying`
        : `the end of call ${call.callId} could not be recorded; whether tool "${call.tool}" finished is unknown, so check its own state before retrying`,
    reason,
    ...(call.startedAt ? { startedAt: call.startedAt } : {}),
    durationMs: Math.max(0, now - startedMs),
    source: "audit",
  });
}
