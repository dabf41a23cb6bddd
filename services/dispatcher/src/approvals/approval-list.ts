import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { checkLength } from "@toolmesh/names";
import {
  type Approval,
  ApprovalState,
  type ListApprovalsRequest,
  type ListApprovalsResponse,
  ListApprovalsResponseSchema,
  type Principal,
} from "@toolmesh/proto";
import { approvalPages, approvalPosition, comparePositions, seesApproval } from "./approvers.js";
import type { ApprovalDeps } from "./held-transitions.js";

/** ListApprovals: the pending holds the caller may decide (or made), oldest first. */
export async function listApprovals(
  deps: Pick<ApprovalDeps, "store" | "approverRoles">,
  p: Principal,
  req: ListApprovalsRequest,
): Promise<ListApprovalsResponse> {
  const size = approvalPages.pageSize(req.pageSize);
  if (req.tool) checkLength("tool", "toolName", req.tool);
  if (req.agentId) checkLength("agent_id", "principalId", req.agentId);
  const fingerprint = approvalPages.fingerprint([req.tool, req.agentId]);
  const after = approvalPages.decode(req.pageToken, fingerprint);
  const now = Date.now();
  const visible = (await deps.store.list())
    .map((s) => s.held.approval)
    .filter((a): a is Approval => a !== undefined && a.state === ApprovalState.PENDING)
    .filter((a) => !a.expiresAt || timestampMs(a.expiresAt) > now)
    .filter(
      (a) =>
        (req.tool === "" || a.tool === req.tool) &&
        (req.agentId === "" || a.agentId === req.agentId),
    )
    .filter((a) => seesApproval(p, a, deps.approverRoles))
    .filter((a) => approvalPosition(a) > after)
    .sort((a, b) => comparePositions(approvalPosition(a), approvalPosition(b)));
  const page = visible.slice(0, size);
  const last = page.at(-1);
  return create(ListApprovalsResponseSchema, {
    approvals: page,
    nextPageToken:
      visible.length > size && last
        ? approvalPages.encode(approvalPosition(last), fingerprint)
        : "",
  });
}
