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
  | "cancelled"
  | "approval_denied"
  | "approval_expired"
  | "permission_revoked"
  | "secret_missing"
  | "tool_changed"
  | "tool_unavailable";

/** True while a held call waits for its caller's own confirmation. */
export function awaitsConfirmation(approval: Approval): boolean {
  return approval.confirmationBy.length > 0 && !approval.confirmedAt;
}

/** The message a caller reads while its call is held. */
export function awaitingMessage(approval: Approval): string {
  const until = approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "its expiry";
  const why = approval.requiredBy.join(", ");
  if (awaitsConfirmation(approval))
    return `tool "${approval.tool}" needs the confirmation of its caller (required by ${approval.confirmationBy.join(", ")}); call ${approval.callId} is held until you confirm or deny it with DecideApproval (call_id ${approval.callId}, as the agent that made it), at most until ${until}${why ? `; then an approver decides (required by ${why})` : ""}. An MCP client is asked instead.`;
  return `tool "${approval.tool}" needs approval (required by ${why}); call ${approval.callId} is held until an approver decides, at most until ${until}. Wait for its outcome with CallbackService.Watch or GetOutcome (call_id ${approval.callId}); do not call again.`;
}

/** Why a call is held, as its APPROVAL_REQUESTED record says. */
function heldFor(approval: Approval): string {
  const parts = [
    approval.requiredBy.length > 0
      ? `approval (required by ${approval.requiredBy.join(", ")})`
      : "",
    approval.confirmationBy.length > 0
      ? `the caller's confirmation (required by ${approval.confirmationBy.join(", ")})`
      : "",
  ];
  return `held for ${parts.filter(Boolean).join(" and ")}`;
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
    reason: heldFor(approval),
    arguments: record.redacted(args),
    ...(approval.expiresAt ? { deadline: approval.expiresAt } : {}),
    events: [
      create(BackendEventSchema, {
        kind: TraceEventKind.APPROVAL_REQUESTED,
        payload: {
          expires_at: approval.expiresAt ? timestampDate(approval.expiresAt).toISOString() : "",
          approver_roles: approval.approverRoles,
          required_by: approval.requiredBy,
          ...(approval.confirmationBy.length > 0
            ? { confirmation_by: approval.confirmationBy }
            : {}),
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
  // A call decided by its own caller was confirmed (or denied) by it, not approved.
  const byCaller = approval.decidedBy !== "" && approval.decidedBy === approval.agentId;
  const decision =
    byCaller && approval.state === ApprovalState.APPROVED
      ? "confirmed"
      : (decisionWord[approval.state] ?? "unknown");
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
 * The record of a caller confirming its call that an approver must still decide: an
 * APPROVAL_DECIDED that leaves it PENDING.
 */
export function recordConfirmation(record: CallRecord, approval: Approval, args: JsonObject): void {
  void record.write({
    action: AuditAction.APPROVAL_DECIDED,
    status: CallStatus.PENDING,
    reason: `confirmed by its caller ${approval.agentId}; an approver decides next`,
    arguments: record.redacted(args),
    decidedBy: approval.agentId,
    events: [
      create(BackendEventSchema, {
        kind: TraceEventKind.APPROVAL_DECIDED,
        payload: { decision: "confirmed", decided_by: approval.agentId, reason: "" },
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
