import { timestampMs } from "@bufbuild/protobuf/wkt";
import { hasRole, Role } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { nameLimits } from "@toolmesh/names";
import type { Approval, Principal } from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";

/** The roles that may decide a held call besides `admin`: the configured ones and the tool's. */
export function deciderRoles(approval: Approval, approverRoles: readonly string[]): string[] {
  return [...new Set([...approverRoles, ...approval.approverRoles])];
}

/**
 * Why `p` may not decide a held call, or undefined when it may: an admin or a holder of one of
 * the approver roles, and never the agent that made the call (nobody approves their own call);
 * but while the call waits for its caller's confirmation, its caller alone.
 */
export function decisionRefusal(
  p: Principal,
  approval: Approval,
  approverRoles: readonly string[],
): string | undefined {
  // A call that waits for its caller's confirmation is the caller's to decide, and nobody else's.
  if (approval.confirmationBy.length > 0 && !approval.confirmedAt) {
    if (p.agentId === approval.agentId && p.userId === approval.userId) return undefined;
    return `call "${approval.callId}" waits for the confirmation of its caller (agent "${approval.agentId}"${approval.userId ? ` for user "${approval.userId}"` : ""}); only it may confirm or deny it`;
  }
  if (p.agentId === approval.agentId)
    return `call "${approval.callId}" was made by agent "${p.agentId}", which you are; another approver must decide it`;
  if (hasRole(p, Role.Admin)) return undefined;
  const roles = deciderRoles(approval, approverRoles);
  if (roles.some((role) => p.roles.includes(role))) return undefined;
  return `deciding calls of tool "${approval.tool}" needs the role admin${roles.length ? ` or ${roles.join(", ")}` : ""}; your token has ${p.roles.length ? `the roles ${p.roles.join(", ")}` : "no roles"}`;
}

/** True when `p` sees a held call in ListApprovals: one it may decide, or its own. */
export function seesApproval(
  p: Principal,
  approval: Approval,
  approverRoles: readonly string[],
): boolean {
  return (
    p.agentId === approval.agentId || decisionRefusal(p, approval, approverRoles) === undefined
  );
}

/** Digits of a position's time: milliseconds since 1970 fit 16 digits for 300,000 years. */
const TIME_DIGITS = 16;

/** ListApprovals' pages: a position is a held call's place in the order (approvalPosition). */
export const approvalPages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: new RegExp(`^\\d{${TIME_DIGITS}}:[\\x21-\\x7e]{1,${nameLimits.callId}}$`),
  maxPositionLength: TIME_DIGITS + 1 + nameLimits.callId,
});

/**
 * The position of a held call in ListApprovals' order, oldest first, then by call id: its time,
 * zero-padded so that positions sort as strings, and its call id.
 */
export function approvalPosition(approval: Approval): string {
  const ms = approval.requestedAt ? timestampMs(approval.requestedAt) : 0;
  return `${String(ms).padStart(TIME_DIGITS, "0")}:${approval.callId}`;
}

/** Orders two positions. */
export function comparePositions(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** PERMISSION_DENIED with what the caller lacks. */
export function notAnApprover(message: string): ConnectError {
  return new ConnectError(message, Code.PermissionDenied);
}
