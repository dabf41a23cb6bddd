import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import {
  type Approval,
  ApprovalState,
  AuditAction,
  AWAITING_APPROVAL,
  CallErrorSchema,
  CallStatus,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallRecord } from "./call-recorder.js";

/** Why a held call ended without running: the reason and error code of its REFUSED outcome. */
export type UnrunReason =
  | "approval_denied"
  | "approval_expired"
  | "permission_revoked"
  | "tool_changed"
  | "tool_unavailable";

/** The message a caller reads while its call is held. */
export function awaitingMessage(approval: Approval): string {
  const until = approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "its expiry";
  const why = approval.requiredBy.join(", ");
  return `tool "${approval.tool}" needs approval (required by ${why}); call ${approval.callId} is held until an approver decides, at most until ${until}. Wait for its outcome with CallbackService.Watch or GetOutcome (call_id ${approval.callId}); do not call again.`;
}

/**
 * The records of a held call: the APPROVAL_REQUESTED trace event and audit record, and the
 * PENDING outcome that Callback keeps (so GetOutcome shows the call waiting). The outcome's
 * message id is not the call id, which the call's final outcome needs.
 */
export function recordHeld(record: CallRecord, approval: Approval, args: JsonObject): void {
  const requestedMs = approval.requestedAt ? timestampMs(approval.requestedAt) : Date.now();
  record.trace(TraceEventKind.APPROVAL_REQUESTED, {
    expires_at: approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "",
    approver_roles: approval.approverRoles,
    required_by: approval.requiredBy,
  });
  record.audit({
    action: AuditAction.APPROVAL_REQUESTED,
    status: CallStatus.PENDING,
    errorCode: "",
    errorMessage: "",
    reason: `held for approval (required by ${approval.requiredBy.join(", ")})`,
    durationMs: 0,
    attempts: 0,
    arguments: args,
  });
  record.outcome(
    {
      status: CallStatus.PENDING,
      error: create(CallErrorSchema, {
        code: AWAITING_APPROVAL,
        message: awaitingMessage(approval),
      }),
      reason: AWAITING_APPROVAL,
      durationMs: 0,
      attempts: 0,
      startedAt: timestampFromMs(requestedMs),
    },
    `${record.call.callId}:held`,
  );
}

const decisionWord: Partial<Record<ApprovalState, string>> = {
  [ApprovalState.APPROVED]: "approved",
  [ApprovalState.DENIED]: "denied",
  [ApprovalState.EXPIRED]: "expired",
};

/** The APPROVAL_DECIDED trace event and audit record: approved, denied, or expired, and by whom. */
export function recordDecision(record: CallRecord, approval: Approval, args: JsonObject): void {
  const decision = decisionWord[approval.state] ?? "unknown";
  record.trace(TraceEventKind.APPROVAL_DECIDED, {
    decision,
    decided_by: approval.decidedBy,
    reason: approval.reason,
  });
  const approved = approval.state === ApprovalState.APPROVED;
  record.audit({
    action: AuditAction.APPROVAL_DECIDED,
    status: approved ? CallStatus.PENDING : CallStatus.REFUSED,
    errorCode: approved ? "" : `approval_${decision}`,
    errorMessage: "",
    reason:
      approval.state === ApprovalState.EXPIRED
        ? "no approver decided before the approval expired"
        : `${decision} by ${approval.decidedBy}${approval.reason ? `: ${approval.reason}` : ""}`,
    durationMs: 0,
    attempts: 0,
    arguments: args,
    decidedBy: approval.decidedBy,
  });
}

/**
 * The REFUSED outcome of a held call that ends without running (denied, expired, or refused by
 * the checks it passes again once approved). Its duration is 0: the tool never executed.
 */
export function recordUnrun(
  record: CallRecord,
  approval: Approval,
  end: { reason: UnrunReason; message: string },
): void {
  const now = Date.now();
  record.outcome({
    status: CallStatus.REFUSED,
    error: create(CallErrorSchema, { code: end.reason, message: end.message }),
    reason: end.reason,
    durationMs: 0,
    attempts: 0,
    startedAt: approval.requestedAt ?? timestampFromMs(now),
    finishedAt: timestampFromMs(now),
  });
}
