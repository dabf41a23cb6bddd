import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, codeName, invalidField, notFound } from "@toolmesh/errors";
import { callFields } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import {
  type Approval,
  ApprovalDecision,
  ApprovalState,
  AWAITING_APPROVAL,
  CallStatus,
  type DecideApprovalRequest,
  type DecideApprovalResponse,
  DecideApprovalResponseSchema,
  type DispatchResponse,
  DispatchResponseSchema,
  type HeldCall,
  type Principal,
} from "@toolmesh/proto";
import { approvalEvents } from "../chain/hold.js";
import { CallRefused } from "../chain/refusal.js";
import {
  awaitingMessage,
  awaitsConfirmation,
  recordConfirmation,
  recordDecision,
} from "../records/approval-records.js";
import { decisionRefusal, notAnApprover } from "./approvers.js";
import {
  type ApprovalDeps,
  closeUnrun,
  confirmHeld,
  recordOf,
  stateWord,
  transition,
} from "./held-transitions.js";
import { recheckHeld, recheckSecrets } from "./recheck.js";

/** The longest reason an approver may give. */
const MAX_REASON = 512;

/** DecideApproval: approve (the call runs now, on this Dispatcher) or deny (it ends REFUSED). */
export async function decideApproval(
  deps: ApprovalDeps,
  p: Principal,
  req: DecideApprovalRequest,
): Promise<DecideApprovalResponse> {
  if (req.callId === "") throw invalidField("call_id", "name the held call to decide");
  checkLength("call_id", "callId", req.callId);
  if (req.decision === ApprovalDecision.UNSPECIFIED)
    throw invalidField("decision", "must be APPROVAL_DECISION_APPROVE or APPROVAL_DECISION_DENY");
  if (req.reason.length > MAX_REASON)
    throw invalidField("reason", `is ${req.reason.length} characters; at most ${MAX_REASON}`);
  const stored = await deps.store.get(req.callId);
  const approval = stored?.held.approval;
  if (!stored || !approval)
    throw notFound(
      "held call",
      req.callId,
      "it was never held for approval, or its hold already ended (decided or expired); its outcome says how",
    );
  const refusal = decisionRefusal(p, approval, deps.approverRoles);
  if (refusal) throw notAnApprover(refusal);
  if (approval.state !== ApprovalState.PENDING)
    throw new ConnectError(
      `call "${req.callId}" was already ${stateWord(approval.state)}${approval.decidedBy ? ` by ${approval.decidedBy}` : ""}`,
      Code.FailedPrecondition,
    );
  if (approval.expiresAt && timestampMs(approval.expiresAt) <= Date.now())
    throw new ConnectError(
      `the approval of call "${req.callId}" expired at ${timestampDate(approval.expiresAt).toISOString()}; it ends REFUSED approval_expired`,
      Code.FailedPrecondition,
    );
  if (!deps.recorder.writable)
    throw new ConnectError(
      "toolmesh cannot record the decision right now (NATS is unreachable); retry in a few seconds",
      Code.Unavailable,
    );
  const approve = req.decision === ApprovalDecision.APPROVE;
  if (approve && awaitsConfirmation(approval) && approval.requiredBy.length > 0) {
    // Confirmed by its caller, the call still waits for an approver.
    const confirmed = await confirmHeld(deps.store, stored);
    const record = recordOf(deps.recorder, confirmed);
    recordConfirmation(record, confirmed.approval as Approval, confirmed.arguments ?? {});
    await record.flush().catch((error: unknown) => {
      throw new ConnectError(
        `the confirmation of call "${req.callId}" could not be recorded (${String(error)}); retry`,
        Code.Unavailable,
      );
    });
    return create(DecideApprovalResponseSchema, {
      approval: confirmed.approval,
      result: stillHeld(confirmed.approval as Approval),
    });
  }
  const decided = await transition(deps.store, stored, {
    state: approve ? ApprovalState.APPROVED : ApprovalState.DENIED,
    decidedBy: p.agentId,
    reason: req.reason,
  });
  const decidedApproval = decided.approval as Approval;
  deps.log.info(
    { ...callFields(approval), decided_by: p.agentId, approve },
    approve ? "held call approved" : "held call denied",
  );
  const result = approve
    ? await runApproved(deps, decided)
    : await closeUnrun(deps, decided, {
        reason: "approval_denied",
        message: `call ${req.callId} to tool "${approval.tool}" was denied by ${p.agentId}${req.reason ? `: ${req.reason}` : ""}; it did not run`,
      });
  return create(DecideApprovalResponseSchema, { approval: decidedApproval, result });
}

/** Runs an approved call after checking it again; a failed check ends it REFUSED. */
async function runApproved(deps: ApprovalDeps, held: HeldCall): Promise<DispatchResponse> {
  const a = held.approval as Approval;
  const rechecked = recheckHeld(deps.checks, held);
  const checked =
    "reason" in rechecked
      ? rechecked
      : ((await recheckSecrets(deps.checks, held, rechecked)) ?? rechecked);
  const record = recordOf(deps.recorder, held);
  recordDecision(record, a, held.arguments ?? {});
  if ("reason" in checked) {
    record.refused(
      {
        code: codeName(Code.FailedPrecondition),
        message: checked.message,
        reason: checked.reason,
      },
      held.arguments,
      0,
    );
    return closeUnrun(deps, held, checked, false, record);
  }
  try {
    await record.flush();
  } catch (error) {
    throw new ConnectError(
      `the approval of call "${a.callId}" could not be recorded (${String(error)}); it will be closed as interrupted`,
      Code.Unavailable,
    );
  }
  approvalEvents().inc({ event: "approved" });
  const release = () => {
    deps.store.delete(a.callId).catch((error: unknown) => {
      deps.log.warn(
        { err: error, ...callFields(a) },
        "could not delete a started held call; the sweep will",
      );
    });
  };
  try {
    return await deps.chain.runApproved(held, checked, release);
  } catch (error) {
    if (error instanceof CallRefused) throw error.error;
    throw error;
  }
}

/** The PENDING response of a held call that still waits. */
function stillHeld(approval: Approval): DispatchResponse {
  return create(DispatchResponseSchema, {
    callId: approval.callId,
    traceId: approval.traceId,
    status: CallStatus.PENDING,
    error: { code: AWAITING_APPROVAL, message: awaitingMessage(approval) },
    ...(approval.expiresAt ? { approvalExpiresAt: approval.expiresAt } : {}),
  });
}

/**
 * Withdraws a held call of the caller's before anyone decided it (an MCP client cancelling its
 * task): it ends REFUSED `cancelled` without running. NOT_FOUND for a call that is not the
 * caller's held call; FAILED_PRECONDITION once decided.
 */
export async function withdrawHeld(
  deps: ApprovalDeps,
  p: Principal,
  callId: string,
): Promise<DispatchResponse> {
  const stored = await deps.store.get(callId);
  const approval = stored?.held.approval;
  if (!stored || !approval || approval.agentId !== p.agentId || approval.userId !== p.userId)
    throw notFound("held call", callId, "it is not a held call of yours");
  if (approval.state !== ApprovalState.PENDING)
    throw new ConnectError(
      `call "${callId}" was already ${stateWord(approval.state)}; it can no longer be withdrawn`,
      Code.FailedPrecondition,
    );
  const withdrawn = await transition(deps.store, stored, {
    state: ApprovalState.DENIED,
    decidedBy: p.agentId,
    reason: "withdrawn by its caller",
  });
  return closeUnrun(deps, withdrawn, {
    reason: "cancelled",
    message: `call ${callId} to tool "${approval.tool}" was withdrawn by its caller before it ran`,
  });
}
