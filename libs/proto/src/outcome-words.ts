// What a call's status means, once for every service, the CLI and the console. Hand-written beside
// the generated contracts because it is a rule about the contract's CallStatus; the Python and Go
// clients check their copies of it against test/vectors/outcome-words.json.
import { CallStatus } from "./gen/toolmesh/common/v1/common_pb.js";

/**
 * The statuses a finished call can have: a Watch of a call ends on one of them. REFUSED reaches
 * an outcome only for a call held for approval and then denied or ended unrun (expired, tool
 * changed, permission revoked, tool unavailable); PENDING, held or accepted by an asynchronous
 * tool, is not final.
 */
export const finalStatuses: readonly CallStatus[] = [
  CallStatus.SUCCESS,
  CallStatus.FAILURE,
  CallStatus.INTERRUPTED,
  CallStatus.REFUSED,
];

/** True when a call with this status has ended. */
export function isFinal(status: CallStatus): boolean {
  return finalStatuses.includes(status);
}

/**
 * The reason of the PENDING outcome of a call held for approval, and the error code of the
 * Dispatch reply that says so.
 */
export const AWAITING_APPROVAL = "awaiting_approval";

/**
 * True for a call held for approval: PENDING with reason `awaiting_approval` (an outcome or a
 * callback event) or error code `awaiting_approval` (the Dispatch reply, which has no reason).
 */
export function awaitsApproval(result: {
  status: CallStatus;
  reason?: string;
  error?: { code: string } | undefined;
}): boolean {
  return (
    result.status === CallStatus.PENDING &&
    (result.reason || result.error?.code) === AWAITING_APPROVAL
  );
}

/** The status as clients and the CLI print it: `SUCCESS`, `REFUSED` … (`UNSPECIFIED` when unknown). */
export function statusName(status: CallStatus): string {
  return CallStatus[status] ?? "UNSPECIFIED";
}

/** The status as callback subjects, logs and memory entries spell it: `success`, `refused` … */
export function statusWord(status: CallStatus): string {
  return statusName(status).toLowerCase();
}
