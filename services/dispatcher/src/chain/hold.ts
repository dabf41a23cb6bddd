import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { KvConflictError } from "@toolmesh/nats";
import {
  ApprovalSchema,
  ApprovalState,
  AWAITING_APPROVAL,
  CallErrorSchema,
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  type HeldCall,
  HeldCallSchema,
  type Principal,
  PrincipalSchema,
} from "@toolmesh/proto";
import { counter } from "@toolmesh/telemetry";
import { awaitingMessage, recordHeld } from "../records/approval-records.js";
import type { CallRecord } from "../records/call-recorder.js";
import type { HeldCallStore } from "../records/held-calls.js";
import { unrecorded } from "./recording-gate.js";
import type { CheckedCall, HoldSettings } from "./types.js";

/** Calls held, and how their holds ended: `requested`, `approved`, `denied`, `expired`. */
export const approvalEvents = () =>
  counter(
    "toolmesh_dispatcher_approvals_total",
    "Calls held for approval, and how their holds ended (approved, denied, expired), by event",
    ["event"],
  );

/** A call that passed its checks and needs approval. */
export interface CallToHold {
  checked: CheckedCall;
  principal: Principal;
  record: CallRecord;
  startedMs: number;
  requestTimeoutMs: number;
  idempotencyKey: string;
}

/**
 * Holds a call for approval instead of running it: the held call (with the arguments the backend
 * will receive) goes to the shared bucket first, then its records (APPROVAL_REQUESTED, the
 * PENDING outcome); the reply is PENDING once both are acked. If the records cannot be written
 * the call is let go and refused, as a call whose start cannot be recorded is.
 */
export async function holdCall(
  store: HeldCallStore,
  settings: HoldSettings,
  call: CallToHold,
): Promise<DispatchResponse> {
  const { checked, principal, record } = call;
  const spec = checked.tool.spec;
  const { callId, traceId, parentId } = record.call;
  const approval = create(ApprovalSchema, {
    callId,
    traceId,
    tool: spec.name,
    agentId: principal.agentId,
    userId: principal.userId,
    arguments: record.redacted(checked.args),
    requestedAt: timestampFromMs(call.startedMs),
    expiresAt: timestampFromMs(call.startedMs + settings.holdMs),
    state: ApprovalState.PENDING,
    approverRoles:
      checked.approvalBy.length > 0
        ? [...new Set([...settings.approverRoles, ...spec.approverRoles])]
        : [],
    requiredBy: checked.approvalBy,
    confirmationBy: checked.confirmationBy,
  });
  const held = create(HeldCallSchema, {
    approval,
    arguments: checked.args,
    parentId,
    roles: principal.roles,
    keyId: principal.keyId,
    timeoutMs: call.requestTimeoutMs,
    definitionHash: checked.tool.definitionHash,
    idempotencyKey: call.idempotencyKey,
    ...(checked.confirmationBy.length > 0
      ? { confirmationNonce: randomBytes(18).toString("base64url") }
      : {}),
  });
  try {
    await store.create(held);
  } catch (error) {
    if (error instanceof KvConflictError)
      throw new ConnectError(
        `call "${callId}" is already held for approval; give each call its own call_id (or leave it empty)`,
        Code.AlreadyExists,
      );
    throw unrecorded(error, "start", spec.name);
  }
  recordHeld(record, approval, checked.args);
  try {
    await record.flush();
  } catch (error) {
    // Unrecorded, the hold must not exist: nobody could see why the call ran later.
    await store.delete(callId).catch(() => {});
    throw unrecorded(error, "start", spec.name);
  }
  approvalEvents().inc({ event: "requested" });
  return create(DispatchResponseSchema, {
    callId,
    traceId,
    status: CallStatus.PENDING,
    error: create(CallErrorSchema, { code: AWAITING_APPROVAL, message: awaitingMessage(approval) }),
    durationMs: Date.now() - call.startedMs,
    attempts: 0,
    ...(approval.expiresAt ? { approvalExpiresAt: approval.expiresAt } : {}),
  });
}

/** The caller of a held call, as it was when the call was held. */
export function heldPrincipal(held: HeldCall): Principal {
  return create(PrincipalSchema, {
    agentId: held.approval?.agentId ?? "",
    userId: held.approval?.userId ?? "",
    roles: held.roles,
    keyId: held.keyId,
  });
}
