import { create } from "@bufbuild/protobuf";
import {
  AuditAction,
  type AuditRecord,
  AWAITING_APPROVAL,
  type CallbackEvent,
  CallbackEventSchema,
  CallErrorSchema,
  CallStatus,
  isFinal,
} from "@toolmesh/proto";

/**
 * The outcome one record states for its call, as Callback broadcasts it and GetOutcome shows it:
 * PENDING for a call held for approval (APPROVAL_REQUESTED) or accepted by an asynchronous tool
 * (a PENDING TOOL_CALL); final for a TOOL_CALL or an asynchronous tool's TOOL_REPORTED. Records
 * that state no outcome (a start, a refusal, a decision, an admin change) give undefined.
 */
export function outcomeOf(record: AuditRecord): CallbackEvent | undefined {
  const held = record.action === AuditAction.APPROVAL_REQUESTED;
  if (
    !held &&
    record.action !== AuditAction.TOOL_CALL &&
    record.action !== AuditAction.TOOL_REPORTED
  )
    return undefined;
  const code = held ? record.errorCode || AWAITING_APPROVAL : record.errorCode;
  return create(CallbackEventSchema, {
    callId: record.callId,
    traceId: record.traceId,
    parentId: record.parentId,
    tool: record.tool,
    agentId: record.agentId,
    userId: record.userId,
    status: held ? CallStatus.PENDING : record.status,
    output: record.output,
    error: code
      ? create(CallErrorSchema, {
          code,
          message: record.errorMessage,
          ...(record.errorDetails ? { details: record.errorDetails } : {}),
        })
      : undefined,
    reason: held ? AWAITING_APPROVAL : record.reason,
    durationMs: record.durationMs,
    attempts: record.attempts,
    time: record.time,
    ...(record.cost ? { cost: record.cost } : {}),
    cachedFrom: record.cachedFrom,
  });
}

/**
 * A call's outcome from its records in chain order: the first final one wins (a late second end,
 * from a sweeper or a Dispatcher that came back, changes nothing); with none, the latest PENDING;
 * undefined when no record states one.
 */
export function callOutcome(records: readonly AuditRecord[]): CallbackEvent | undefined {
  let pending: CallbackEvent | undefined;
  for (const record of records) {
    const outcome = outcomeOf(record);
    if (!outcome) continue;
    if (isFinal(outcome.status)) return outcome;
    pending = outcome;
  }
  return pending;
}
