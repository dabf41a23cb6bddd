import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import { invalidField } from "@toolmesh/errors";
import {
  ANY_SCOPE,
  checkLength,
  checkPrincipalId,
  checkRole,
  checkScope,
  checkToolName,
  isToolName,
  nameLimits,
} from "@toolmesh/names";
import { ANY, globProblem } from "@toolmesh/policy";
import {
  type CheckRequest,
  type CreateApiKeyRequest,
  Effect,
  type GrantSpec,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";

/** Size limits of what a caller writes beyond names and ids (those are in @toolmesh/names). */
export const limits = {
  scopes: 32,
  description: 512,
  roles: 16,
} as const;

function checkRoles(field: string, roles: string[]): void {
  if (roles.length > limits.roles)
    throw invalidField(field, `has ${roles.length} roles; at most ${limits.roles} allowed`);
  for (const [i, role] of roles.entries()) checkRole(`${field}[${i}]`, role);
}

function checkFuture(field: string, expiresAt: Timestamp, nowMs: number): void {
  if (timestampMs(expiresAt) <= nowMs)
    throw invalidField(field, "is not in the future; omit it for no expiry");
}

/** Validates a grant an admin writes; INVALID_ARGUMENT naming the first bad field. */
export function validateGrantSpec(
  spec: GrantSpec | undefined,
  nowMs: number,
  allowDisabled = false,
): GrantSpec {
  if (!spec) throw invalidField("grant", "is required");
  const principal = spec.principal;
  if (!principal || principal.kind === PrincipalKind.UNSPECIFIED)
    throw invalidField("grant.principal.kind", "must be AGENT, USER or ROLE");
  checkPrincipalId("grant.principal.id", principal.id, true);
  if (principal.kind === PrincipalKind.ROLE && principal.id !== ANY)
    checkRole("grant.principal.id", principal.id);

  const resource = spec.resource;
  if (!resource || resource.kind === ResourceKind.UNSPECIFIED)
    throw invalidField("grant.resource.kind", "must be TOOL, GLOB or GROUP");
  if (resource.kind === ResourceKind.GLOB) {
    const problem = globProblem(resource.pattern);
    if (problem) throw invalidField("grant.resource.pattern", `glob ${problem}`);
  } else if (!isToolName(resource.pattern)) {
    throw invalidField(
      "grant.resource.pattern",
      `must be a ${resource.kind === ResourceKind.TOOL ? "tool" : "group"} name: 1-64 characters of a-z, 0-9, _, - and single dots between parts, starting with a letter (use kind GLOB for wildcards)`,
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
    if (scope === ANY_SCOPE) {
      if (spec.scopes.length > 1) throw invalidField(field, "* covers every scope; list it alone");
    } else {
      checkScope(field, scope);
    }
    if (seen.has(scope)) throw invalidField(field, `repeats the scope ${scope}`);
    seen.add(scope);
  }

  if (spec.effect === Effect.UNSPECIFIED)
    throw invalidField("grant.effect", "must be ALLOW or DENY");
  if (spec.requiresApproval && spec.effect !== Effect.ALLOW)
    throw invalidField(
      "grant.requires_approval",
      "applies to allow grants only (a deny grant refuses outright); drop it or make the grant EFFECT_ALLOW",
    );
  if (spec.requiresConfirmation && spec.effect !== Effect.ALLOW)
    throw invalidField(
      "grant.requires_confirmation",
      "applies to allow grants only (a deny grant refuses outright); drop it or make the grant EFFECT_ALLOW",
    );
  if (spec.unlisted && spec.effect !== Effect.ALLOW)
    throw invalidField(
      "grant.unlisted",
      "applies to allow grants only (a deny grant lists nothing); drop it or make the grant EFFECT_ALLOW",
    );
  if (spec.expiresAt) checkFuture("grant.expires_at", spec.expiresAt, nowMs);
  if (!spec.enabled && !allowDisabled)
    throw invalidField(
      "grant.enabled",
      "must be true for a new grant (a disabled one would never apply); disable an existing grant with UpdateGrant",
    );
  checkDescription("grant.description", spec.description);
  return spec;
}

/** Checks a description an admin writes against its limit. */
export function checkDescription(field: string, description: string): void {
  if (description.length > limits.description)
    throw invalidField(
      field,
      `is ${description.length} characters; at most ${limits.description} allowed`,
    );
}

/** Validates a key request; returns the roles to give (default `agent`). */
export function validateCreateApiKey(req: CreateApiKeyRequest, nowMs: number): string[] {
  checkPrincipalId("agent_id", req.agentId, false);
  if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
  const roles = req.roles.length === 0 ? ["agent"] : req.roles;
  checkRoles("roles", roles);
  checkLength("name", "keyName", req.name);
  if (req.expiresAt) checkFuture("expires_at", req.expiresAt, nowMs);
  return [...new Set(roles)];
}

/** Grant and API key ids as this service issues them: lowercase hex. */
const ISSUED_ID = /^[a-f0-9]+$/;

/** Checks a grant or API key id a caller names; INVALID_ARGUMENT naming `field` otherwise. */
export function checkIssuedId(field: string, id: string): void {
  if (id === "") throw invalidField(field, "must not be empty");
  checkLength(field, "issuedId", id);
  if (!ISSUED_ID.test(id)) throw invalidField(field, "is not an id this service issued");
}

/** The page position of ListGrants and ListApiKeys: an issued id. */
export const issuedIdPosition = new RegExp(`^[a-f0-9]{1,${nameLimits.issuedId}}$`);

/** Validates a Check request's fields. */
export function validateCheck(req: CheckRequest): void {
  checkPrincipalId("agent_id", req.agentId, false);
  if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
  checkRoles("roles", req.roles);
  if (req.tool === "") throw invalidField("tool", "must name the tool to check");
  checkToolName("tool", req.tool);
}
