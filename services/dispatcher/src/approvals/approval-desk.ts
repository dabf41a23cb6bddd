import { clone, create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, codeName, invalidField, notFound } from "@toolmesh/errors";
import { callFields, type Logger } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import { KvConflictError } from "@toolmesh/nats";
import {
  type Approval,
  ApprovalDecision,
  ApprovalState,
  CallErrorSchema,
  CallStatus,
  type DecideApprovalRequest,
  type DecideApprovalResponse,
  DecideApprovalResponseSchema,
  type DispatchResponse,
  DispatchResponseSchema,
  type HeldCall,
  HeldCallSchema,
  type ListApprovalsRequest,
  type ListApprovalsResponse,
  ListApprovalsResponseSchema,
  type Principal,
} from "@toolmesh/proto";
import type { CheckDeps } from "../call-checks.js";
import { CallRefused } from "../call-execution.js";
import type { CallRecord, CallRecorder } from "../call-recorder.js";
import type { DispatchChain } from "../dispatch-chain.js";
import type { OutcomeLookup } from "../outcome-lookup.js";
import { recordDecision, recordUnrun, type UnrunReason } from "./approval-records.js";
import {
  approvalPages,
  approvalPosition,
  comparePositions,
  decisionRefusal,
  notAnApprover,
  seesApproval,
} from "./approvers.js";
import type { HeldCallStore, StoredHeldCall } from "./held-calls.js";
import { approvalEvents, heldPrincipal } from "./hold.js";
import { recheckHeld } from "./recheck.js";

/** The longest reason an approver may give. */
const MAX_REASON = 512;

export interface ApprovalDeskDeps {
  store: HeldCallStore;
  chain: DispatchChain;
  checks: CheckDeps;
  recorder: CallRecorder;
  /** Whether a decided call's outcome was recorded after all (the sweep's question). */
  outcomes: OutcomeLookup;
  /** Roles (besides admin) that may decide every held call: TOOLMESH_APPROVER_ROLES. */
  approverRoles: string[];
  log: Logger;
}

/**
 * Held calls from the approvers' side: listing them, approving (the call runs through the rest
 * of the chain on this Dispatcher) or denying them, and closing those nobody decided in time.
 * Every change of a held call's state is compare-and-set on the shared bucket, so exactly one
 * approver, or the expiry, wins.
 */
export class ApprovalDesk {
  private readonly events = approvalEvents();

  constructor(private readonly deps: ApprovalDeskDeps) {}

  /** ListApprovals: the pending holds the caller may decide (or made), oldest first. */
  async list(p: Principal, req: ListApprovalsRequest): Promise<ListApprovalsResponse> {
    const size = approvalPages.pageSize(req.pageSize);
    if (req.tool) checkLength("tool", "toolName", req.tool);
    if (req.agentId) checkLength("agent_id", "principalId", req.agentId);
    const fingerprint = approvalPages.fingerprint([req.tool, req.agentId]);
    const after = approvalPages.decode(req.pageToken, fingerprint);
    const now = Date.now();
    const visible = (await this.deps.store.list())
      .map((s) => s.held.approval)
      .filter((a): a is Approval => a !== undefined && a.state === ApprovalState.PENDING)
      .filter((a) => !a.expiresAt || timestampMs(a.expiresAt) > now)
      .filter(
        (a) =>
          (req.tool === "" || a.tool === req.tool) &&
          (req.agentId === "" || a.agentId === req.agentId),
      )
      .filter((a) => seesApproval(p, a, this.deps.approverRoles))
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

  /** DecideApproval: approve (the call runs now) or deny (it ends REFUSED) a held call. */
  async decide(p: Principal, req: DecideApprovalRequest): Promise<DecideApprovalResponse> {
    if (req.callId === "") throw invalidField("call_id", "name the held call to decide");
    checkLength("call_id", "callId", req.callId);
    if (req.decision === ApprovalDecision.UNSPECIFIED)
      throw invalidField("decision", "must be APPROVAL_DECISION_APPROVE or APPROVAL_DECISION_DENY");
    if (req.reason.length > MAX_REASON)
      throw invalidField("reason", `is ${req.reason.length} characters; at most ${MAX_REASON}`);
    const stored = await this.deps.store.get(req.callId);
    const approval = stored?.held.approval;
    if (!stored || !approval)
      throw notFound(
        "held call",
        req.callId,
        "it was never held for approval, or its hold already ended (decided or expired); its outcome says how",
      );
    const refusal = decisionRefusal(p, approval, this.deps.approverRoles);
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
    if (!this.deps.recorder.writable)
      throw new ConnectError(
        "toolmesh cannot record the decision right now (NATS is unreachable); retry in a few seconds",
        Code.Unavailable,
      );
    const approve = req.decision === ApprovalDecision.APPROVE;
    const decided = await this.transition(stored, {
      state: approve ? ApprovalState.APPROVED : ApprovalState.DENIED,
      decidedBy: p.agentId,
      reason: req.reason,
    });
    const decidedApproval = decided.approval as Approval;
    this.deps.log.info(
      { ...callFields(approval), decided_by: p.agentId, approve },
      approve ? "held call approved" : "held call denied",
    );
    const result = approve
      ? await this.runApproved(decided)
      : await this.closeUnrun(decided, {
          reason: "approval_denied",
          message: `call ${req.callId} to tool "${approval.tool}" was denied by ${p.agentId}${req.reason ? `: ${req.reason}` : ""}; it did not run`,
        });
    return create(DecideApprovalResponseSchema, { approval: decidedApproval, result });
  }

  /**
   * Ends the holds nobody decided in time (REFUSED `approval_expired`) and closes the decided
   * ones whose Dispatcher stopped before finishing them. Returns how many it closed.
   */
  async sweep(staleAfterMs: { approved: number; refused: number }): Promise<number> {
    const now = Date.now();
    let closed = 0;
    for (const stored of await this.deps.store.list()) {
      const a = stored.held.approval;
      if (!a) continue;
      if (a.state === ApprovalState.PENDING) {
        if (!a.expiresAt || timestampMs(a.expiresAt) > now) continue;
        if (await this.expire(stored)) closed++;
        continue;
      }
      const decidedMs = a.decidedAt ? timestampMs(a.decidedAt) : 0;
      const stale =
        a.state === ApprovalState.APPROVED ? staleAfterMs.approved : staleAfterMs.refused;
      if (now - decidedMs < stale) continue;
      if (await this.closeStale(stored)) closed++;
    }
    return closed;
  }

  private async expire(stored: StoredHeldCall): Promise<boolean> {
    let expired: HeldCall;
    try {
      expired = await this.transition(stored, {
        state: ApprovalState.EXPIRED,
        decidedBy: "",
        reason: "",
      });
    } catch (error) {
      // An approver decided first; the hold is theirs now.
      if (error instanceof ConnectError && error.code === Code.FailedPrecondition) return false;
      throw error;
    }
    const a = expired.approval as Approval;
    this.deps.log.info({ ...callFields(a), tool: a.tool }, "held call expired");
    await this.closeUnrun(expired, {
      reason: "approval_expired",
      message: `no approver decided on call ${a.callId} to tool "${a.tool}" before ${a.expiresAt ? timestampDate(a.expiresAt).toISOString() : "its expiry"}; it did not run. Call again if it is still needed`,
    });
    return true;
  }

  /**
   * A decided hold still here long after its decision: the Dispatcher that took it stopped
   * before recording its end. Claims it, then records the end unless the outcome exists.
   */
  private async closeStale(stored: StoredHeldCall): Promise<boolean> {
    const a = stored.held.approval as Approval;
    let claimed: HeldCall;
    try {
      claimed = await this.transition(stored, {
        state: a.state,
        decidedBy: a.decidedBy,
        reason: a.reason,
      });
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.FailedPrecondition) return false;
      throw error;
    }
    // The held call's outcomes come after it was held. Every hold has the time (hold.ts); one
    // without would be looked for over the whole shard.
    const heldMs = a.requestedAt ? timestampMs(a.requestedAt) : 0;
    if (await this.deps.outcomes.hasOutcome(a.callId, heldMs)) {
      await this.deps.store.delete(a.callId);
      return false;
    }
    const record = this.recordOf(claimed);
    if (a.state === ApprovalState.APPROVED) {
      const now = Date.now();
      record.finished(
        {
          status: CallStatus.INTERRUPTED,
          reason: "dispatcher_lost",
          error: create(CallErrorSchema, {
            code: "dispatcher_lost",
            message: `the Dispatcher that took the approval of call ${a.callId} stopped before the call ended; whether tool "${a.tool}" ran is unknown, so check its own state before retrying`,
          }),
        },
        { args: claimed.arguments ?? {}, attempts: 0, startedMs: now, finishedMs: now },
      );
      await record.flush();
      await this.deps.store.delete(a.callId);
    } else {
      const reason: UnrunReason =
        a.state === ApprovalState.DENIED ? "approval_denied" : "approval_expired";
      await this.closeUnrun(
        claimed,
        {
          reason,
          message: `call ${a.callId} to tool "${a.tool}" was ${stateWord(a.state)}; it did not run`,
        },
        false,
      );
    }
    this.deps.log.warn(callFields(a), "closed a decided held call left unfinished");
    return true;
  }

  /** Runs an approved call after checking it again; a failed check ends it REFUSED. */
  private async runApproved(held: HeldCall): Promise<DispatchResponse> {
    const a = held.approval as Approval;
    const checked = recheckHeld(this.deps.checks, held);
    const record = this.recordOf(held);
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
      return this.closeUnrun(held, checked, false, record);
    }
    try {
      await record.flush();
    } catch (error) {
      throw new ConnectError(
        `the approval of call "${a.callId}" could not be recorded (${String(error)}); it will be closed as interrupted`,
        Code.Unavailable,
      );
    }
    this.events.inc({ event: "approved" });
    const release = () => {
      this.deps.store.delete(a.callId).catch((error: unknown) => {
        this.deps.log.warn(
          { err: error, ...callFields(a) },
          "could not delete a started held call; the sweep will",
        );
      });
    };
    try {
      return await this.deps.chain.runApproved(held, checked, release);
    } catch (error) {
      if (error instanceof CallRefused) throw error.error;
      throw error;
    }
  }

  /**
   * Ends a held call that will not run: the decision's records (unless written already), its
   * REFUSED outcome, then the hold is deleted. A failure leaves the hold for the sweep.
   */
  private async closeUnrun(
    held: HeldCall,
    end: { reason: UnrunReason; message: string },
    withDecision = true,
    record = this.recordOf(held),
  ): Promise<DispatchResponse> {
    const a = held.approval as Approval;
    if (withDecision) recordDecision(record, a, held.arguments ?? {});
    recordUnrun(record, a, end);
    try {
      await record.flush();
    } catch (error) {
      throw new ConnectError(
        `the end of call "${a.callId}" could not be recorded (${String(error)}); it will be recorded by a later sweep`,
        Code.Unavailable,
      );
    }
    await this.deps.store.delete(a.callId).catch(() => {});
    this.events.inc({ event: end.reason.replace("approval_", "") });
    return create(DispatchResponseSchema, {
      callId: a.callId,
      traceId: a.traceId,
      status: CallStatus.REFUSED,
      refusalCode: codeName(Code.FailedPrecondition),
      error: create(CallErrorSchema, { code: end.reason, message: end.message }),
    });
  }

  /** Moves a held call to a new state, compare-and-set; FAILED_PRECONDITION when it changed. */
  private async transition(
    stored: StoredHeldCall,
    to: { state: ApprovalState; decidedBy: string; reason: string },
  ): Promise<HeldCall> {
    const held = clone(HeldCallSchema, stored.held);
    const a = held.approval as Approval;
    a.state = to.state;
    a.decidedBy = to.decidedBy;
    a.reason = to.reason;
    a.decidedAt = timestampFromMs(Date.now());
    try {
      await this.deps.store.update(held, stored.revision);
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      throw new ConnectError(
        `call "${a.callId}" was decided meanwhile by another approver (or expired); read it again`,
        Code.FailedPrecondition,
      );
    }
    return held;
  }

  private recordOf(held: HeldCall): CallRecord {
    const a = held.approval as Approval;
    return this.deps.recorder.begin({
      traceId: a.traceId,
      callId: a.callId,
      parentId: held.parentId,
      tool: a.tool,
      principal: heldPrincipal(held),
    });
  }
}

function stateWord(state: ApprovalState): string {
  return (ApprovalState[state] ?? "unknown").toLowerCase();
}
