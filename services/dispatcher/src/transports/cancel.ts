import { create } from "@bufbuild/protobuf";
import { hasRole, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import { CancelResponseSchema, type Principal } from "@toolmesh/proto";
import type { RunningCalls } from "../chain/running-calls.js";

/** Interrupts a running call of the caller (admins may cancel any). */
export function cancelCall(running: RunningCalls, callId: string, caller: Principal) {
  if (callId === "") throw invalidField("call_id", "name the call to cancel");
  checkLength("call_id", "callId", callId);
  const call = running.get(callId);
  if (!call) throw notFound("running call", callId, "it may have finished already");
  if (call.agentId !== caller.agentId && !hasRole(caller, Role.Admin)) {
    throw new ConnectError(
      `call "${callId}" belongs to another agent; only it or an admin may cancel it`,
      Code.PermissionDenied,
    );
  }
  call.interrupt("cancelled");
  return create(CancelResponseSchema, {});
}
