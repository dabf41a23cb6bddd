import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs, timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import {
  type Approval,
  ApprovalState,
  AuditAction,
  AWAITING_APPROVAL,
  BackendEventSchema,
  CallStatus,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallRecord } from "./call-recorder.js";

/** Why a held call ended without running: the reason and error code of its REFUSED outcome. */
export type UnrunReason =
  | "approval_denied"
  | "approval_expired"
  | "permission_revoked"
  | "secret_missing"
  | "tool_changed"
  | "tool_unavailable";

/** The message a caller reads while its call is held. */
export function awaitingMessage(approval: Approval): string {
  const until = approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "its expiry";
  const why = approval.requiredBy.join(", ");
  return `tool "${approval.tool}" needs approval (required by ${why}); call ${approval.callId} is held until an approver decides, at most until ${until}. Wait for its outcome with CallbackService.Watch or GetOutcome (call_id ${approval.callId}); do not call again.`;
}

/**
 * The record of a held call, APPROVAL_REQUESTED: its arguments, who must decide and until when,
 * and the PENDING outcome it states (so GetOutcome and Watch show the call waiting).
 */
export function recordHeld(record: CallRecord, approval: Approval, args: JsonObject): void {
  const requestedMs = approval.requestedAt ? timestampMs(approval.requestedAt) : Date.now();
  void record.write({
    action: AuditAction.APPROVAL_REQUESTED,
    time: timestampFromMs(requestedMs),
    status: CallStatus.PENDING,
    errorCode: AWAITING_APPROVAL,
    errorMessage: awaitingMessage(approval),
    reason: `held for approval (required by ${approval.requiredBy.join(", ")})`,
    arguments: record.redacted(args),
    ...(approval.expiresAt ? { deadline: approval.expiresAt } : {}),
    events: [
      create(BackendEventSchema, {
        kind: TraceEventKind.APPROVAL_REQUESTED,
        payload: {
          expires_at: approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "",
          approver_roles: approval.approverRoles,
          required_by: approval.requiredBy,
        },
        time: timestampFromMs(requestedMs),
      }),
    ],
  });
}

const decisionWord: Partial<Record<ApprovalState, string>> = {
  [ApprovalState.APPROVED]: "approved",
  [ApprovalState.DENIED]: "denied",
  [ApprovalState.EXPIRED]: "expired",
};

/** The APPROVAL_DECIDED record: approved, denied, or expired, and by whom. */
export function recordDecision(record: CallRecord, approval: Approval, args: JsonObject): void {
  const decision = decisionWord[approval.state] ?? "unknown";
  const approved = approval.state === ApprovalState.APPROVED;
  void record.write({
    action: AuditAction.APPROVAL_DECIDED,
    status: approved ? CallStatus.PENDING : CallStatus.REFUSED,
    errorCode: approved ? "" : `approval_${decision}`,
    reason:
      approval.state === ApprovalState.EXPIRED
        ? "no approver decided before the approval expired"
        : `${decision} by ${approval.decidedBy}${approval.reason ? `: ${approval.reason}` : ""}`,
    arguments: record.redacted(args),
    decidedBy: approval.decidedBy,
    events: [
      create(BackendEventSchema, {
        kind: TraceEventKind.APPROVAL_DECIDED,
        payload: { decision, decided_by: approval.decidedBy, reason: approval.reason },
        time: timestampNow(),
      }),
    ],
  });
}

/**
 * The end record of a held call that ends without running (denied, expired, or refused by the
 * checks it passes again once approved): a TOOL_CALL with status REFUSED and no attempts.
 */
export function recordUnrun(
  record: CallRecord,
  approval: Approval,
  end: { reason: UnrunReason; message: string },
): void {
  void record.write({
    action: AuditAction.TOOL_CALL,
    status: CallStatus.REFUSED,
    errorCode: end.reason,
    errorMessage: end.message,
    reason: end.reason,
    durationMs: 0,
    attempts: 0,
    startedAt: approval.requestedAt ?? timestampNow(),
  });
}
