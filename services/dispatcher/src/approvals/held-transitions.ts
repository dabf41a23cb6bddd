import { clone, create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, codeName } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { KvConflictError } from "@toolmesh/nats";
import {
  type Approval,
  ApprovalState,
  CallErrorSchema,
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  type HeldCall,
  HeldCallSchema,
} from "@toolmesh/proto";
import type { DispatchChain } from "../chain/dispatch-chain.js";
import { approvalEvents, heldPrincipal } from "../chain/hold.js";
import type { CheckDeps } from "../chain/types.js";
import { recordDecision, recordUnrun, type UnrunReason } from "../records/approval-records.js";
import type { CallRecord, CallRecorder } from "../records/call-recorder.js";
import type { HeldCallStore, StoredHeldCall } from "../records/held-calls.js";
import type { OutcomeLookup } from "../records/outcome-lookup.js";

/** What listing, deciding and sweeping held calls read and write. */
export interface ApprovalDeps {
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
 * Moves a held call to a new state, compare-and-set on the shared bucket, so exactly one
 * approver, or the expiry, wins; FAILED_PRECONDITION when it changed meanwhile.
 */
export async function transition(
  store: HeldCallStore,
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
    await store.update(held, stored.revision);
  } catch (error) {
    if (!(error instanceof KvConflictError)) throw error;
    throw new ConnectError(
      `call "${a.callId}" was decided meanwhile by another approver (or expired); read it again`,
      Code.FailedPrecondition,
    );
  }
  return held;
}

/**
 * Marks a held call confirmed by its caller (it stays PENDING for its approver),
 * compare-and-set as any transition.
 */
export async function confirmHeld(store: HeldCallStore, stored: StoredHeldCall): Promise<HeldCall> {
  const held = clone(HeldCallSchema, stored.held);
  const a = held.approval as Approval;
  a.confirmedAt = timestampFromMs(Date.now());
  try {
    await store.update(held, stored.revision);
  } catch (error) {
    if (!(error instanceof KvConflictError)) throw error;
    throw new ConnectError(
      `call "${a.callId}" was decided meanwhile (or expired); read it again`,
      Code.FailedPrecondition,
    );
  }
  return held;
}

/** True when a transition lost to another approver or the expiry. */
export function lostTransition(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.FailedPrecondition;
}

/** The records of a held call, under the ids it was held with. */
export function recordOf(recorder: CallRecorder, held: HeldCall): CallRecord {
  const a = held.approval as Approval;
  return recorder.begin({
    traceId: a.traceId,
    callId: a.callId,
    parentId: held.parentId,
    tool: a.tool,
    principal: heldPrincipal(held),
  });
}

/**
 * Ends a held call that will not run: the decision's records (unless written already), its
 * REFUSED outcome, then the hold is deleted. A failure leaves the hold for the sweep.
 */
export async function closeUnrun(
  deps: Pick<ApprovalDeps, "store" | "recorder">,
  held: HeldCall,
  end: { reason: UnrunReason; message: string },
  withDecision = true,
  record = recordOf(deps.recorder, held),
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
  await deps.store.delete(a.callId).catch(() => {});
  approvalEvents().inc({ event: end.reason.replace("approval_", "") });
  return create(DispatchResponseSchema, {
    callId: a.callId,
    traceId: a.traceId,
    status: CallStatus.REFUSED,
    refusalCode: codeName(Code.FailedPrecondition),
    error: create(CallErrorSchema, { code: end.reason, message: end.message }),
  });
}

/** approved, denied, expired … as messages say it. */
export function stateWord(state: ApprovalState): string {
  return (ApprovalState[state] ?? "unknown").toLowerCase();
}
