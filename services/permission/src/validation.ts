import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import { invalidField } from "@toolmesh/errors";
import { ANY, globProblem } from "@toolmesh/policy";
import {
  type CheckRequest,
  type CreateApiKeyRequest,
  Effect,
  type GrantSpec,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";

/** Size limits of everything a caller writes. */
export const limits = {
  principalId: 128,
  scopes: 32,
  scope: 64,
  description: 512,
  roles: 16,
  role: 32,
  keyName: 128,
} as const;

/** A tool or group name, as the Registry accepts it. */
export const TOOL_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;
/** Agent, user and principal ids: printable ASCII without spaces. */
const PRINCIPAL_ID = /^[\x21-\x7e]+$/;
/** A scope such as `read:data`, or `*` alone. */
const SCOPE = /^[A-Za-z0-9_.:/-]+$/;
/** A role name such as `admin` or `data-reader`. */
const ROLE = /^[a-z][a-z0-9_-]*$/;

/** Checks an id field; `wildcard` allows `*` (every principal of the kind). */
export function checkPrincipalId(field: string, id: string, wildcard: boolean): void {
  if (id === "") throw invalidField(field, "must not be empty");
  if (id.length > limits.principalId)
    throw invalidField(field, `is ${id.length} characters; at most ${limits.principalId} allowed`);
  if (!PRINCIPAL_ID.test(id))
    throw invalidField(field, "may contain only printable ASCII characters without spaces");
  if (!wildcard && id.includes("*")) throw invalidField(field, "must not contain *");
  if (wildcard && id.includes("*") && id !== ANY)
    throw invalidField(field, "may be * (every principal of the kind) but not contain *");
}

function checkRoles(field: string, roles: string[]): void {
  if (roles.length > limits.roles)
    throw invalidField(field, `has ${roles.length} roles; at most ${limits.roles} allowed`);
  for (const [i, role] of roles.entries()) {
    if (role.length > limits.role || !ROLE.test(role))
      throw invalidField(
        `${field}[${i}]`,
        `must be 1-${limits.role} characters of a-z, 0-9, _ and -, starting with a letter`,
      );
  }
}

function checkFuture(field: string, expiresAt: Timestamp, nowMs: number): void {
  if (timestampMs(expiresAt) <= nowMs)
    throw invalidField(field, "is not in the future; omit it for no expiry");
}

/** Validates a grant an admin writes; INVALID_ARGUMENT naming the first bad field. */
export function validateGrantSpec(spec: GrantSpec | undefined, nowMs: number): GrantSpec {
  if (!spec) throw invalidField("grant", "is required");
  const principal = spec.principal;
  if (!principal || principal.kind === PrincipalKind.UNSPECIFIED)
    throw invalidField("grant.principal.kind", "must be AGENT, USER or ROLE");
  checkPrincipalId("grant.principal.id", principal.id, true);
  if (principal.kind === PrincipalKind.ROLE && principal.id !== ANY)
    checkRoles("grant.principal.id", [principal.id]);

  const resource = spec.resource;
  if (!resource || resource.kind === ResourceKind.UNSPECIFIED)
    throw invalidField("grant.resource.kind", "must be TOOL, GLOB or GROUP");
  if (resource.kind === ResourceKind.GLOB) {
    const problem = globProblem(resource.pattern);
    if (problem) throw invalidField("grant.resource.pattern", `glob ${problem}`);
  } else if (!TOOL_NAME.test(resource.pattern)) {
    throw invalidField(
      "grant.resource.pattern",
      `must be a ${resource.kind === ResourceKind.TOOL ? "tool" : "group"} name: 1-64 characters of a-z, 0-9, _, . and -, starting with a letter (use kind GLOB for wildcards)`,
    );
  }

  if (spec.scopes.length === 0)
    throw invalidField("grant.scopes", "must list at least one scope, or * for all");
  if (spec.scopes.length > limits.scopes)
    throw invalidField(
      "grant.scopes",
      `has ${spec.scopes.length} scopes; at most ${limits.scopes} allowed`,
    );
  const seen = new Set<string>();
  for (const [i, scope] of spec.scopes.entries()) {
    const field = `grant.scopes[${i}]`;
    if (scope === ANY) {
      if (spec.scopes.length > 1) throw invalidField(field, "* covers every scope; list it alone");
    } else if (scope === "" || scope.length > limits.scope || !SCOPE.test(scope)) {
      throw invalidField(
        field,
        `must be 1-${limits.scope} characters of A-Z, a-z, 0-9, _, ., :, / and - (such as read:data), or * alone`,
      );
    }
    if (seen.has(scope)) throw invalidField(field, `repeats the scope ${scope}`);
    seen.add(scope);
  }

  if (spec.effect === Effect.UNSPECIFIED)
    throw invalidField("grant.effect", "must be ALLOW or DENY");
  if (spec.expiresAt) checkFuture("grant.expires_at", spec.expiresAt, nowMs);
  if (!spec.enabled)
    throw invalidField(
      "grant.enabled",
      "must be true: grants cannot be updated, so a grant written disabled would never apply",
    );
  if (spec.description.length > limits.description)
    throw invalidField(
      "grant.description",
      `is ${spec.description.length} characters; at most ${limits.description} allowed`,
    );
  return spec;
}

/** Validates a key request; returns the roles to give (default `agent`). */
export function validateCreateApiKey(req: CreateApiKeyRequest, nowMs: number): string[] {
  checkPrincipalId("agent_id", req.agentId, false);
  if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
  const roles = req.roles.length === 0 ? ["agent"] : req.roles;
  checkRoles("roles", roles);
  if (req.name.length > limits.keyName)
    throw invalidField(
      "name",
      `is ${req.name.length} characters; at most ${limits.keyName} allowed`,
    );
  if (req.expiresAt) checkFuture("expires_at", req.expiresAt, nowMs);
  return [...new Set(roles)];
}

/** Validates a Check request's fields. */
export function validateCheck(req: CheckRequest): void {
  checkPrincipalId("agent_id", req.agentId, false);
  if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
  checkRoles("roles", req.roles);
  if (!TOOL_NAME.test(req.tool))
    throw invalidField(
      "tool",
      req.tool === ""
        ? "must name the tool to check"
        : "is not a tool name: 1-64 characters of a-z, 0-9, _, . and -, starting with a letter",
    );
}
