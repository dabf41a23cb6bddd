import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { invalidField } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import {
  type Approval,
  ApprovalState,
  type ListApprovalsRequest,
  type ListApprovalsResponse,
  ListApprovalsResponseSchema,
  type Principal,
} from "@toolmesh/proto";
import {
  approvalPosition,
  comparePositions,
  decodeApprovalToken,
  encodeApprovalToken,
  seesApproval,
} from "./approvers.js";
import type { ApprovalDeps } from "./held-transitions.js";

const MAX_PAGE = 1000;

/** ListApprovals: the pending holds the caller may decide (or made), oldest first. */
export async function listApprovals(
  deps: Pick<ApprovalDeps, "store" | "approverRoles">,
  p: Principal,
  req: ListApprovalsRequest,
): Promise<ListApprovalsResponse> {
  if (req.pageSize > MAX_PAGE)
    throw invalidField("page_size", `is ${req.pageSize}; at most ${MAX_PAGE}`);
  if (req.tool) checkLength("tool", "toolName", req.tool);
  if (req.agentId) checkLength("agent_id", "principalId", req.agentId);
  const after = req.pageToken ? decodeApprovalToken(req.pageToken) : undefined;
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
    .filter((a) => !after || comparePositions(approvalPosition(a), after) > 0)
    .sort((a, b) => comparePositions(approvalPosition(a), approvalPosition(b)));
  const size = req.pageSize || 100;
  const page = visible.slice(0, size);
  const last = page.at(-1);
  return create(ListApprovalsResponseSchema, {
    approvals: page,
    nextPageToken: visible.length > size && last ? encodeApprovalToken(approvalPosition(last)) : "",
  });
}
