import type { JsonObject } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  invalidField,
  permissionDenied,
  toolNotFound,
  validationFailed,
} from "@toolmesh/errors";
import { checkCallerId, checkLength, GENERATED_CALL_ID_PREFIX, isTraceId } from "@toolmesh/names";
import { type Decision, type DispatchRequest, type Principal, ToolStatus } from "@toolmesh/proto";
import { toViolations } from "@toolmesh/schema";
import { SchemaCompileError, type ToolValidators } from "../catalog/tool-catalog.js";
import { usableTools } from "../catalog/visible-tools.js";
import type { CallSecrets } from "../runtimes/call-secrets.js";
import { checkBudgets } from "./budgets.js";
import { checkLimits } from "./limits.js";
import { checkPin } from "./pins.js";
import { Refusal } from "./refusal.js";
import type { CheckDeps, CheckedCall } from "./types.js";

/** Who requires approval of a call: the tool itself, and grants that allow it only so. */
export function approvalRequirements(
  spec: { requiresApproval: boolean },
  decision: Decision,
): string[] {
  // Almost every call: nothing to allocate.
  if (!spec.requiresApproval && !decision.requiresApproval) return [];
  return [
    ...(spec.requiresApproval ? ["tool"] : []),
    ...(decision.requiresApproval ? decision.matchedGrantIds.map((id) => `grant:${id}`) : []),
  ];
}

/** Who requires the caller's own confirmation of a call, in the same words. */
export function confirmationRequirements(
  spec: { requiresConfirmation: boolean },
  decision: Decision,
): string[] {
  if (!spec.requiresConfirmation && !decision.requiresConfirmation) return [];
  return [
    ...(spec.requiresConfirmation ? ["tool"] : []),
    ...(decision.requiresConfirmation ? decision.matchedGrantIds.map((id) => `grant:${id}`) : []),
  ];
}

/**
 * Every check a call passes before its tool may run, in the order a caller can fix them: its
 * ids, that the snapshots are loaded, that the tool exists and is enabled, that the arguments
 * match the input schema, and that the agent (and the user it acts for) may call it, within its rate limits and budgets, and that its circuit breaker is not open. Throws a
 * Refusal naming what to fix.
 */
export function checkCall(
  deps: CheckDeps,
  req: DispatchRequest,
  principal: Principal,
  callId: string,
  /** Told when the next check begins (validate, authorise), for the call's spans. */
  onStep: (step: "validate" | "authorise") => void = () => {},
): CheckedCall {
  const ctx = req.context;
  // Lengths first: nothing below (the running calls, the catalog, a subject) sees an oversized id.
  bounded(() => checkLength("tool", "toolName", req.tool), "bad tool name");
  if (ctx?.traceId && !isTraceId(ctx.traceId)) {
    throw new Refusal(
      invalidField(
        "context.trace_id",
        `"${ctx.traceId.slice(0, 40)}" is not a W3C trace id: expected 32 lowercase hex characters, not all zero; leave it empty to get one`,
      ),
      "bad trace_id",
    );
  }
  bounded(() => checkCallerId("context.call_id", "callId", callId), "bad call_id");
  if (ctx?.callId.startsWith(GENERATED_CALL_ID_PREFIX)) {
    throw new Refusal(
      invalidField(
        "context.call_id",
        `call ids starting with "${GENERATED_CALL_ID_PREFIX}" are the ones the Dispatcher makes; choose another call_id, or leave it empty to get one`,
      ),
      "bad call_id",
    );
  }
  bounded(
    () => checkCallerId("context.parent_id", "parentId", ctx?.parentId ?? ""),
    "bad parent_id",
  );
  bounded(
    () => checkCallerId("context.idempotency_key", "idempotencyKey", ctx?.idempotencyKey ?? ""),
    "bad idempotency_key",
  );
  if (deps.running.get(callId)) {
    throw new Refusal(
      new ConnectError(
        `call "${callId}" is already running; give each call its own call_id (or leave it empty)`,
        Code.AlreadyExists,
      ),
      "duplicate call_id",
      true,
    );
  }
  if (req.tool === "") {
    throw new Refusal(
      invalidField("tool", "name the tool to call, for example data.query"),
      "no tool named",
    );
  }
  const { catalog, policy } = deps;
  if (!catalog.isReady || !policy.isReady) {
    throw new Refusal(
      new ConnectError(
        `the dispatcher has not loaded the ${catalog.isReady ? "permission grants" : "tool registry"} yet; retry in a moment`,
        Code.Unavailable,
      ),
      "snapshot not ready",
    );
  }

  const tool = catalog.get(req.tool);
  const spec = tool?.spec;
  if (!tool || !spec) {
    throw new Refusal(toolNotFound(req.tool, usableTools(deps, principal)), "unknown tool");
  }
  if (spec.status === ToolStatus.DISABLED) {
    throw new Refusal(
      new ConnectError(
        `tool "${spec.name}" is disabled; pick another tool`,
        Code.FailedPrecondition,
      ),
      "tool disabled",
    );
  }
  checkPin(tool, ctx?.toolPin);

  onStep("validate");
  let validators: ToolValidators;
  try {
    validators = catalog.validatorsOf(tool);
  } catch (error) {
    if (!(error instanceof SchemaCompileError)) throw error;
    throw new Refusal(
      new ConnectError(
        `tool "${spec.name}" has a schema that does not compile; tell its owner`,
        Code.FailedPrecondition,
      ),
      "schema does not compile",
    );
  }
  const args: JsonObject = req.arguments ?? {};
  if (validators.input && !validators.input(args)) {
    throw new Refusal(
      validationFailed(`arguments of tool "${spec.name}"`, toViolations(validators.input.errors)),
      "arguments failed validation",
    );
  }

  onStep("authorise");
  const decision = policy.decide(principal, catalog.policyView(tool));
  if (!decision.allowed) {
    throw new Refusal(
      permissionDenied({
        resource: spec.name,
        reason: decision.reason,
        missingScopes: decision.missingScopes,
        denyGrantId: decision.denyGrantId,
        principal: decision.deniedPrincipal,
      }),
      decision.reason,
    );
  }
  checkLimits(deps.limits, principal, spec.name, decision);
  const budgeted = checkBudgets(deps.budgets, principal, spec.price, decision);
  // Last, so a call refused for anything else is never taken as a breaker's probe.
  const probe = deps.breakers?.admit(spec) ?? false;
  return {
    tool: tool as CheckedCall["tool"],
    args,
    validators,
    approvalBy: approvalRequirements(spec, decision),
    confirmationBy: confirmationRequirements(spec, decision),
    budgeted,
    probe,
    grantIds: decision.matchedGrantIds,
  };
}

/** Runs a name check, turning its INVALID_ARGUMENT into a Refusal with `reason`. */
function bounded(check: () => void, reason: string): void {
  try {
    check();
  } catch (error) {
    if (error instanceof ConnectError) throw new Refusal(error, reason);
    throw error;
  }
}

/**
 * Refuses a call whose tool needs a secret its caller has none of (FAILED_PRECONDITION naming
 * it and how to provide it; for OAuth, the link that connects the account). Only for tools that
 * name secrets: the others never come here.
 */
export async function requireSecrets(
  secrets: CallSecrets,
  tool: CheckedCall["tool"],
  principal: Principal,
): Promise<void> {
  try {
    await secrets.check(tool, principal);
  } catch (error) {
    if (error instanceof ConnectError) throw new Refusal(error, "secret missing");
    throw error;
  }
}
