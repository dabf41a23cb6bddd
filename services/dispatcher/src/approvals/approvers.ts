import { timestampMs } from "@bufbuild/protobuf/wkt";
import { hasRole, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import type { Approval, Principal } from "@toolmesh/proto";

/** The roles that may decide a held call besides `admin`: the configured ones and the tool's. */
export function deciderRoles(approval: Approval, approverRoles: readonly string[]): string[] {
  return [...new Set([...approverRoles, ...approval.approverRoles])];
}

/**
 * Why `p` may not decide a held call, or undefined when it may: an admin or a holder of one of
 * the approver roles, and never the agent that made the call (nobody approves their own call).
 */
export function decisionRefusal(
  p: Principal,
  approval: Approval,
  approverRoles: readonly string[],
): string | undefined {
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

/** The position of a held call in ListApprovals' order: oldest first, then by call id. */
export function approvalPosition(approval: Approval): [number, string] {
  return [approval.requestedAt ? timestampMs(approval.requestedAt) : 0, approval.callId];
}

/** A page token: the position of the last approval of the page. */
export function encodeApprovalToken(position: [number, string]): string {
  return Buffer.from(JSON.stringify(position), "utf8").toString("base64url");
}

/** Reads a page token back; INVALID_ARGUMENT for anything ListApprovals did not hand out. */
export function decodeApprovalToken(token: string): [number, string] {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      typeof value[1] === "string" &&
      encodeApprovalToken([value[0], value[1]]) === token
    )
      return [value[0], value[1]];
  } catch {
    // Falls through to the error below.
  }
  throw invalidField(
    "page_token",
    "is not a token ListApprovals returned; omit it for the first page",
  );
}

/** Orders two positions. */
export function comparePositions(a: [number, string], b: [number, string]): number {
  return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
}

/** PERMISSION_DENIED with what the caller lacks. */
export function notAnApprover(message: string): ConnectError {
  return new ConnectError(message, Code.PermissionDenied);
}
