import { Code, ConnectError } from "@toolmesh/errors";
import { type HeldCall, type Price, ToolStatus } from "@toolmesh/proto";
import { SchemaCompileError } from "../catalog/tool-catalog.js";
import { heldPrincipal } from "../chain/hold.js";
import type { CheckDeps, CheckedCall } from "../chain/types.js";
import type { UnrunReason } from "../records/approval-records.js";

/** Why an approved call may not run after all. */
export interface Unrunnable {
  reason: UnrunReason;
  message: string;
}

/**
 * The checks an approved call passes again before it runs, since time passed while it waited:
 * the tool still exists, is enabled and has the definition the approver saw, and the grants
 * still allow the caller (a grant revoked meanwhile refuses it). Rate limits counted the call
 * when it was held and are not asked again, nor are budgets, though its cost counts against them.
 */
export function recheckHeld(deps: CheckDeps, held: HeldCall): CheckedCall | Unrunnable {
  const tool = held.approval?.tool ?? "";
  const callId = held.approval?.callId ?? "";
  const found = deps.catalog.get(tool);
  if (!found?.spec || found.spec.status === ToolStatus.DISABLED)
    return {
      reason: "tool_unavailable",
      message: `tool "${tool}" was removed or disabled while call ${callId} waited for approval; it did not run`,
    };
  if (found.definitionHash !== held.definitionHash)
    return {
      reason: "tool_changed",
      message: `tool "${tool}" changed while call ${callId} waited for approval (the approver saw another definition); it did not run. Call again to have the new definition approved`,
    };
  const principal = heldPrincipal(held);
  const decision = deps.policy.decide(principal, deps.catalog.policyView(found));
  if (!decision.allowed)
    return {
      reason: "permission_revoked",
      message: `the grants no longer allow call ${callId} (${decision.reason}); it did not run`,
    };
  let validators: CheckedCall["validators"];
  try {
    validators = deps.catalog.validatorsOf(found);
  } catch (error) {
    if (!(error instanceof SchemaCompileError)) throw error;
    return {
      reason: "tool_unavailable",
      message: `tool "${tool}" has a schema that does not compile; call ${callId} did not run`,
    };
  }
  return {
    tool: found as CheckedCall["tool"],
    args: held.arguments ?? {},
    validators,
    approvalBy: [],
    confirmationBy: [],
    budgeted: budgetedOf(deps, principal, found.spec.price, decision.matchedGrantIds),
    grantIds: decision.matchedGrantIds,
  };
}

/** Who an approved call's cost counts against, and the budgets that apply to it now. */
function budgetedOf(
  deps: CheckDeps,
  principal: { agentId: string; userId: string },
  price: Price | undefined,
  grantIds: readonly string[],
): CheckedCall["budgeted"] {
  if (!deps.budgets || !price) return undefined;
  const who = { agentId: principal.agentId, userId: principal.userId, grantIds };
  const budgets = deps.budgets.applying(who, price.currency);
  return budgets.length > 0 ? { ...who, budgets } : undefined;
}

/**
 * The vault check an approved call passes again: a secret its tool needs may have been deleted,
 * or the user's connection revoked, while it waited. Undefined when it may run; an UNAVAILABLE
 * (the vault's index not loaded, Permission not answering) is thrown, as a failed record is.
 */
export async function recheckSecrets(
  deps: CheckDeps,
  held: HeldCall,
  checked: CheckedCall,
): Promise<Unrunnable | undefined> {
  if (!deps.secrets || checked.tool.spec.secrets.length === 0) return undefined;
  try {
    await deps.secrets.check(checked.tool, heldPrincipal(held));
    return undefined;
  } catch (error) {
    if (!(error instanceof ConnectError) || error.code !== Code.FailedPrecondition) throw error;
    return {
      reason: "secret_missing",
      message: `call ${held.approval?.callId ?? ""} did not run: ${error.rawMessage}`,
    };
  }
}
