import type {
  DecideApprovalRequest,
  DecideApprovalResponse,
  DispatchResponse,
  ListApprovalsRequest,
  ListApprovalsResponse,
  Principal,
} from "@toolmesh/proto";
import { decideApproval, withdrawHeld } from "./approval-decide.js";
import { listApprovals } from "./approval-list.js";
import { sweepHeldCalls } from "./approval-sweep.js";
import type { ApprovalDeps } from "./held-transitions.js";

/**
 * Held calls from the approvers' side: listing them (approval-list), approving or denying them
 * (approval-decide), and closing those nobody decided in time (approval-sweep). Every change of
 * a held call's state is compare-and-set on the shared bucket, so exactly one approver, or the
 * expiry, wins.
 */
export class ApprovalDesk {
  constructor(private readonly deps: ApprovalDeps) {}

  /** ListApprovals: the pending holds the caller may decide (or made), oldest first. */
  list(p: Principal, req: ListApprovalsRequest): Promise<ListApprovalsResponse> {
    return listApprovals(this.deps, p, req);
  }

  /** DecideApproval: approve (the call runs now) or deny (it ends REFUSED) a held call. */
  decide(p: Principal, req: DecideApprovalRequest): Promise<DecideApprovalResponse> {
    return decideApproval(this.deps, p, req);
  }

  /** Withdraws a held call of the caller's that nobody decided yet: it ends REFUSED cancelled. */
  withdraw(p: Principal, callId: string): Promise<DispatchResponse> {
    return withdrawHeld(this.deps, p, callId);
  }

  /** Closes expired holds and decided ones left unfinished; resolves with how many. */
  sweep(staleAfterMs: { approved: number; refused: number }): Promise<number> {
    return sweepHeldCalls(this.deps, staleAfterMs);
  }
}
