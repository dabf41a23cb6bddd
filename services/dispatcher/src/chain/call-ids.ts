import { Code, ConnectError } from "@toolmesh/errors";
import { checkCallerId, clipped, isTraceId, newCallId } from "@toolmesh/names";
import type { Principal } from "@toolmesh/proto";
import type { CallIdOwners } from "../records/idempotency.js";
import { Refusal } from "./refusal.js";

/**
 * Claims the call id for the caller's agent; a call id another agent used first is refused with
 * ALREADY_EXISTS and changes nothing of that agent's call.
 */
export async function claimCallId(
  owners: CallIdOwners,
  callId: string,
  principal: Principal,
): Promise<void> {
  let owned: boolean;
  try {
    owned = await owners.claim(callId, principal.agentId);
  } catch (error) {
    throw new Refusal(
      new ConnectError(
        "the dispatcher cannot record who owns this call id right now, so the tool did not run; retry shortly",
        Code.Unavailable,
        undefined,
        undefined,
        error,
      ),
      "call id owner not recorded",
      true,
    );
  }
  if (!owned)
    throw new Refusal(
      new ConnectError(
        `call_id "${callId}" belongs to another agent's call; give each call its own call_id (or leave it empty)`,
        Code.AlreadyExists,
      ),
      "call_id of another agent",
      true,
    );
}

/**
 * The ids a call's records are filed under. Records are filed under valid ids even when the
 * request's are not (it is refused): an oversized or malformed id never reaches a subject.
 */
export function recordIdentity(
  ids: { traceId: string; callId: string; parentId: string; tool: string; principal: Principal },
  newTraceId: () => string,
): { traceId: string; callId: string; parentId: string; tool: string; principal: Principal } {
  const valid = (kind: "callId" | "parentId", id: string) => {
    try {
      checkCallerId("", kind, id);
      return true;
    } catch {
      return false;
    }
  };
  return {
    traceId: isTraceId(ids.traceId) ? ids.traceId : newTraceId(),
    callId: valid("callId", ids.callId) ? ids.callId : newCallId(),
    parentId: valid("parentId", ids.parentId) ? ids.parentId : clipped("parentId", ids.parentId),
    tool: clipped("toolName", ids.tool),
    principal: ids.principal,
  };
}
