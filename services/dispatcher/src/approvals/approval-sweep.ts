import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampMs } from "@bufbuild/protobuf/wkt";
import { callFields } from "@toolmesh/log";
import {
  type Approval,
  ApprovalState,
  CallErrorSchema,
  CallStatus,
  type HeldCall,
} from "@toolmesh/proto";
import type { UnrunReason } from "../records/approval-records.js";
import type { StoredHeldCall } from "../records/held-calls.js";
import {
  type ApprovalDeps,
  closeUnrun,
  lostTransition,
  recordOf,
  stateWord,
  transition,
} from "./held-transitions.js";

/**
 * Ends the holds nobody decided in time (REFUSED `approval_expired`) and closes the decided
 * ones whose Dispatcher stopped before finishing them. Returns how many it closed.
 */
export async function sweepHeldCalls(
  deps: ApprovalDeps,
  staleAfterMs: { approved: number; refused: number },
): Promise<number> {
  const now = Date.now();
  let closed = 0;
  for (const stored of await deps.store.list()) {
    const a = stored.held.approval;
    if (!a) continue;
    if (a.state === ApprovalState.PENDING) {
      if (!a.expiresAt || timestampMs(a.expiresAt) > now) continue;
      if (await expire(deps, stored)) closed++;
      continue;
    }
    const decidedMs = a.decidedAt ? timestampMs(a.decidedAt) : 0;
    const stale = a.state === ApprovalState.APPROVED ? staleAfterMs.approved : staleAfterMs.refused;
    if (now - decidedMs < stale) continue;
    if (await closeStale(deps, stored)) closed++;
  }
  return closed;
}

async function expire(deps: ApprovalDeps, stored: StoredHeldCall): Promise<boolean> {
  let expired: HeldCall;
  try {
    expired = await transition(deps.store, stored, {
      state: ApprovalState.EXPIRED,
      decidedBy: "",
      reason: "",
    });
  } catch (error) {
    // An approver decided first; the hold is theirs now.
    if (lostTransition(error)) return false;
    throw error;
  }
  const a = expired.approval as Approval;
  deps.log.info({ ...callFields(a), tool: a.tool }, "held call expired");
  await closeUnrun(deps, expired, {
    reason: "approval_expired",
    message: `no approver decided on call ${a.callId} to tool "${a.tool}" before ${a.expiresAt ? timestampDate(a.expiresAt).toISOString() : "its expiry"}; it did not run. Call again if it is still needed`,
  });
  return true;
}

/**
 * A decided hold still here long after its decision: the Dispatcher that took it stopped
 * before recording its end. Claims it, then records the end unless the outcome exists.
 */
async function closeStale(deps: ApprovalDeps, stored: StoredHeldCall): Promise<boolean> {
  const a = stored.held.approval as Approval;
  let claimed: HeldCall;
  try {
    claimed = await transition(deps.store, stored, {
      state: a.state,
      decidedBy: a.decidedBy,
      reason: a.reason,
    });
  } catch (error) {
    if (lostTransition(error)) return false;
    throw error;
  }
  if (await deps.outcomes.hasOutcome(a.callId)) {
    await deps.store.delete(a.callId);
    return false;
  }
  const record = recordOf(deps.recorder, claimed);
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
    await deps.store.delete(a.callId);
  } else {
    const reason: UnrunReason =
      a.state === ApprovalState.DENIED ? "approval_denied" : "approval_expired";
    await closeUnrun(
      deps,
      claimed,
      {
        reason,
        message: `call ${a.callId} to tool "${a.tool}" was ${stateWord(a.state)}; it did not run`,
      },
      false,
    );
  }
  deps.log.warn(callFields(a), "closed a decided held call left unfinished");
  return true;
}
