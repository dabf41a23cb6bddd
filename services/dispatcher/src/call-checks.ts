import type { JsonObject } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  invalidField,
  permissionDenied,
  toolNotFound,
  validationFailed,
} from "@toolmesh/errors";
import {
  type Decision,
  type DispatchRequest,
  type Principal,
  type Tool,
  ToolStatus,
} from "@toolmesh/proto";
import type { RunningCalls } from "./running-calls.js";
import {
  SchemaCompileError,
  type ToolCatalog,
  type ToolValidators,
  toViolations,
} from "./tool-catalog.js";

/** The permission decision for a caller and a tool; PolicySnapshot from @toolmesh/policy. */
export interface PermissionGate {
  readonly isReady: boolean;
  decide(
    subject: { agentId: string; userId: string; roles: string[] },
    tool: { name: string; requiredScopes: string[]; groups: string[] },
    now?: Date,
  ): Decision;
}

/** A call refused before its tool ran: what the caller sees, and the reason the records give. */
export class Refusal extends Error {
  override name = "Refusal";
  constructor(
    readonly error: ConnectError,
    readonly reason: string,
  ) {
    super(error.message, { cause: error });
  }
}

/** A call that passed every check: the tool to run and its validated arguments. */
export interface CheckedCall {
  tool: Tool & { spec: NonNullable<Tool["spec"]> };
  args: JsonObject;
  validators: ToolValidators;
}

export const TRACE_ID = /^[0-9a-f]{32}$/;
const ZERO_TRACE_ID = "0".repeat(32);
export const MAX_ID_LENGTH = 128;
const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/** What the checks read: the registry snapshot, the grants and the calls running here. */
export interface CheckDeps {
  catalog: ToolCatalog;
  policy: PermissionGate;
  running: RunningCalls;
}

/**
 * Every check a call passes before its tool may run, in the order a caller can fix them: its
 * ids, that the snapshots are loaded, that the tool exists and is enabled, that the arguments
 * match the input schema, and that the agent (and the user it acts for) may call it. Throws a
 * Refusal naming what to fix.
 */
export function checkCall(
  deps: CheckDeps,
  req: DispatchRequest,
  principal: Principal,
  callId: string,
): CheckedCall {
  const ctx = req.context;
  if (ctx?.traceId && (!TRACE_ID.test(ctx.traceId) || ctx.traceId === ZERO_TRACE_ID)) {
    throw new Refusal(
      invalidField(
        "context.trace_id",
        `"${ctx.traceId.slice(0, 40)}" is not a W3C trace id: expected 32 lowercase hex characters, not all zero; leave it empty to get one`,
      ),
      "bad trace_id",
    );
  }
  if (callId.length > MAX_ID_LENGTH) {
    throw new Refusal(
      invalidField("context.call_id", `longer than ${MAX_ID_LENGTH} characters`),
      "bad call_id",
    );
  }
  if (deps.running.get(callId)) {
    throw new Refusal(
      new ConnectError(
        `call "${callId}" is already running; give each call its own call_id (or leave it empty)`,
        Code.AlreadyExists,
      ),
      "duplicate call_id",
    );
  }
  if ((ctx?.idempotencyKey.length ?? 0) > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new Refusal(
      invalidField(
        "context.idempotency_key",
        `longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
      ),
      "bad idempotency_key",
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
  return { tool: tool as CheckedCall["tool"], args, validators };
}

/** The enabled tools the caller may call, in no particular order. */
export function usableTools(deps: CheckDeps, principal: Principal): string[] {
  const { catalog, policy } = deps;
  const names: string[] = [];
  if (!policy.isReady) return names;
  for (const tool of catalog.all()) {
    if (!tool.spec || tool.spec.status === ToolStatus.DISABLED) continue;
    if (policy.decide(principal, catalog.policyView(tool)).allowed) names.push(tool.spec.name);
  }
  return names;
}
