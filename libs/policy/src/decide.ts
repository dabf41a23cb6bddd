import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type Decision, Effect, type Grant, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { compileGlob } from "./glob.js";

/** Who would call: the agent, the user it acts for ("" for none) and the agent's roles. */
export interface PolicySubject {
  agentId: string;
  userId: string;
  roles: string[];
}

/** What the decision needs to know about a tool. */
export interface PolicyTool {
  name: string;
  requiredScopes: string[];
  groups: string[];
}

/** The wildcard for "every principal of the kind" and "every scope". */
export const ANY = "*";

/** A grant in the shape the decision reads, derived once per stored grant object. */
export interface CompiledGrant {
  readonly id: string;
  readonly principalKind: PrincipalKind;
  readonly principalId: string;
  readonly resourceKind: ResourceKind;
  readonly pattern: string;
  readonly glob: RegExp | undefined;
  readonly scopes: readonly string[];
  readonly allScopes: boolean;
  readonly allow: boolean;
  readonly deny: boolean;
  readonly enabled: boolean;
  /** Milliseconds since the epoch; Infinity when the grant never expires. */
  readonly expiresAtMs: number;
  /** Calls it authorises are held for approval (allow grants only). */
  readonly requiresApproval: boolean;
  /** Calls it authorises wait for the caller's own confirmation (allow grants only). */
  readonly requiresConfirmation: boolean;
  /** The tools it authorises are found by search rather than listed (allow grants only). */
  readonly unlisted: boolean;
}

const compiledGrants = new WeakMap<Grant, CompiledGrant>();

/** The compiled form of a grant, cached per grant object (snapshots keep objects until they change). */
export function compileGrant(grant: Grant): CompiledGrant {
  let c = compiledGrants.get(grant);
  if (c) return c;
  const spec = grant.spec;
  const resourceKind = spec?.resource?.kind ?? ResourceKind.UNSPECIFIED;
  const pattern = spec?.resource?.pattern ?? "";
  const scopes = spec?.scopes ?? [];
  c = {
    id: grant.id,
    principalKind: spec?.principal?.kind ?? PrincipalKind.UNSPECIFIED,
    principalId: spec?.principal?.id ?? "",
    resourceKind,
    pattern,
    glob: resourceKind === ResourceKind.GLOB ? compileGlob(pattern) : undefined,
    scopes,
    allScopes: scopes.includes(ANY),
    allow: spec?.effect === Effect.ALLOW,
    deny: spec?.effect === Effect.DENY,
    enabled: spec?.enabled ?? false,
    expiresAtMs: spec?.expiresAt ? timestampMs(spec.expiresAt) : Number.POSITIVE_INFINITY,
    requiresApproval: spec?.requiresApproval ?? false,
    requiresConfirmation: spec?.requiresConfirmation ?? false,
    unlisted: spec?.unlisted ?? false,
  };
  compiledGrants.set(grant, c);
  return c;
}

/** True when a grant names the agent itself or one of its roles (ROLE `*` needs at least one role). */
export function appliesToAgent(g: CompiledGrant, subject: PolicySubject): boolean {
  if (g.principalKind === PrincipalKind.AGENT)
    return g.principalId === ANY || g.principalId === subject.agentId;
  if (g.principalKind === PrincipalKind.ROLE)
    return g.principalId === ANY ? subject.roles.length > 0 : subject.roles.includes(g.principalId);
  return false;
}

/** True when a grant names the user (USER grants only: the agent's roles are not the user's). */
export function appliesToUser(g: CompiledGrant, userId: string): boolean {
  return (
    userId !== "" &&
    g.principalKind === PrincipalKind.USER &&
    (g.principalId === ANY || g.principalId === userId)
  );
}

/** True when a grant's resource covers the tool. */
export function coversTool(g: CompiledGrant, tool: PolicyTool): boolean {
  switch (g.resourceKind) {
    case ResourceKind.TOOL:
      return g.pattern === tool.name;
    case ResourceKind.GLOB:
      return g.glob?.test(tool.name) ?? false;
    case ResourceKind.GROUP:
      return tool.groups.includes(g.pattern);
    default:
      return false;
  }
}

/** Enabled and not expired: a grant that expires exactly at `now` is already expired. */
export function isLive(g: CompiledGrant, nowMs: number): boolean {
  return g.enabled && g.expiresAtMs > nowMs;
}

/**
 * The decision for one call, from every grant there is. Pure: the same inputs give the same
 * decision in the Permission service's Check and in every local snapshot.
 */
export function decide(
  subject: PolicySubject,
  tool: PolicyTool,
  grants: Iterable<Grant>,
  now: Date,
): Decision {
  const agentSide: CompiledGrant[] = [];
  const userSide: CompiledGrant[] = [];
  for (const grant of grants) {
    const g = compileGrant(grant);
    if (appliesToAgent(g, subject)) agentSide.push(g);
    else if (appliesToUser(g, subject.userId)) userSide.push(g);
  }
  return decideFor(subject, tool, agentSide, userSide, now.getTime());
}

interface SideResult {
  deny: CompiledGrant | undefined;
  missing: string[];
  matched: string[];
}

/**
 * The decision from grants already known to apply to the agent (AGENT and ROLE grants) and to
 * the user (USER grants). Deny wins over allow on either side; then the agent, and the user it
 * acts for, must each be allowed every required scope on their own grants (no confused deputy).
 * A call allowed only with grants that require approval (or the caller's confirmation) is allowed
 * with `requiresApproval` (`requiresConfirmation`); one that other grants allow outright needs
 * neither. A tool allowed only through unlisted grants is `unlisted`.
 */
export function decideFor(
  subject: PolicySubject,
  tool: PolicyTool,
  agentGrants: readonly CompiledGrant[],
  userGrants: readonly CompiledGrant[],
  nowMs: number,
): Decision {
  const first = decideOnce(subject, tool, agentGrants, userGrants, nowMs);
  if (!first.allowed) return first;
  const conditional = (g: CompiledGrant) =>
    (g.requiresApproval || g.requiresConfirmation) && first.matchedGrantIds.includes(g.id);
  let decided = first;
  if (agentGrants.some(conditional) || userGrants.some(conditional)) {
    const outright = (g: CompiledGrant) => !g.requiresApproval && !g.requiresConfirmation;
    decided = decideOnce(
      subject,
      tool,
      agentGrants.filter(outright),
      userGrants.filter(outright),
      nowMs,
    );
    if (!decided.allowed) {
      const held = [...agentGrants, ...userGrants].filter(conditional);
      const approval = held.some((g) => g.requiresApproval);
      const confirmation = held.some((g) => g.requiresConfirmation);
      const after = [approval ? "approval" : "", confirmation ? "the caller's confirmation" : ""];
      decided = {
        ...first,
        requiresApproval: approval,
        requiresConfirmation: confirmation,
        reason: `${first.reason}, after ${after.filter(Boolean).join(" and ")}`,
      };
    }
  }
  return listedOrNot(decided, agentGrants, userGrants);
}

/** An allowed decision marked `unlisted` when every grant it matched is unlisted. */
function listedOrNot(
  decided: Decision,
  agentGrants: readonly CompiledGrant[],
  userGrants: readonly CompiledGrant[],
): Decision {
  // Almost every decision: no unlisted grant applies, nothing to look up.
  if (!agentGrants.some((g) => g.unlisted) && !userGrants.some((g) => g.unlisted)) return decided;
  const matched = new Set(decided.matchedGrantIds);
  const listed = (g: CompiledGrant) => matched.has(g.id) && !g.unlisted;
  if (agentGrants.some(listed) || userGrants.some(listed)) return decided;
  return { ...decided, unlisted: true };
}

function decideOnce(
  subject: PolicySubject,
  tool: PolicyTool,
  agentGrants: readonly CompiledGrant[],
  userGrants: readonly CompiledGrant[],
  nowMs: number,
): Decision {
  const agentName = `agent "${subject.agentId}"`;
  const userName = `user "${subject.userId}", for whom agent "${subject.agentId}" acts,`;
  const agent = evaluate(tool, agentGrants, nowMs);
  const user = subject.userId !== "" ? evaluate(tool, userGrants, nowMs) : undefined;

  if (agent.deny) return denied(tool, agent.deny, agentName, `agent:${subject.agentId}`);
  if (user?.deny) return denied(tool, user.deny, userName, `user:${subject.userId}`);
  if (agent.missing.length > 0 || agent.matched.length === 0)
    return missing(tool, agent, agentName, `agent:${subject.agentId}`);
  if (user && (user.missing.length > 0 || user.matched.length === 0))
    return missing(tool, user, userName, `user:${subject.userId}`);

  const matched = user ? [...new Set([...agent.matched, ...user.matched])] : agent.matched;
  const who = user ? `agent "${subject.agentId}" and user "${subject.userId}"` : agentName;
  return decision({
    allowed: true,
    reason: `${who} may call tool "${tool.name}" (grants ${matched.join(", ")})`,
    matchedGrantIds: matched,
  });
}

/** Deny grants, then which required scopes the live allow grants cover. */
function evaluate(tool: PolicyTool, grants: readonly CompiledGrant[], nowMs: number): SideResult {
  const required = tool.requiredScopes;
  let deny: CompiledGrant | undefined;
  const allows: CompiledGrant[] = [];
  for (const g of grants) {
    if (!isLive(g, nowMs) || !coversTool(g, tool)) continue;
    if (g.deny) {
      // A deny applies when it has `*`, overlaps a required scope, or the tool requires none.
      if (g.allScopes || required.length === 0 || g.scopes.some((s) => required.includes(s))) {
        if (!deny || g.id < deny.id) deny = g;
      }
    } else if (g.allow) {
      allows.push(g);
    }
  }
  const matched = new Set<string>();
  const missingScopes: string[] = [];
  if (required.length === 0) {
    for (const g of allows) matched.add(g.id);
  } else {
    for (const scope of required) {
      let covered = false;
      for (const g of allows) {
        if (g.allScopes || g.scopes.includes(scope)) {
          matched.add(g.id);
          covered = true;
        }
      }
      if (!covered) missingScopes.push(scope);
    }
  }
  return { deny, missing: missingScopes, matched: [...matched].sort() };
}

function scopeList(scopes: readonly string[]): string {
  return `${scopes.length === 1 ? "scope" : "scopes"} ${scopes.join(", ")}`;
}

function denied(
  tool: PolicyTool,
  deny: CompiledGrant,
  who: string,
  principalRef: string,
): Decision {
  const overlap = deny.allScopes
    ? "every scope"
    : tool.requiredScopes.length === 0
      ? "every use"
      : scopeList(tool.requiredScopes.filter((s) => deny.scopes.includes(s)));
  return decision({
    allowed: false,
    reason: `deny grant "${deny.id}" refuses ${who} ${overlap} of tool "${tool.name}"`,
    denyGrantId: deny.id,
    deniedPrincipal: principalRef,
  });
}

function missing(tool: PolicyTool, side: SideResult, who: string, principalRef: string): Decision {
  const what =
    tool.requiredScopes.length === 0
      ? `has no allow grant on tool "${tool.name}"`
      : `has no allow grant covering ${scopeList(side.missing)} on tool "${tool.name}"`;
  return decision({
    allowed: false,
    reason: `${who} ${what}`,
    missingScopes: side.missing,
    deniedPrincipal: principalRef,
  });
}

/**
 * A Decision built as the plain object protobuf-es messages are, without the reflective
 * create(): this runs on every tool call, and create() costs more than the decision itself.
 */
function decision(fields: Partial<Omit<Decision, "$typeName" | "$unknown">>): Decision {
  return {
    $typeName: "toolmesh.permission.v1.Decision",
    allowed: fields.allowed ?? false,
    reason: fields.reason ?? "",
    matchedGrantIds: fields.matchedGrantIds ?? [],
    denyGrantId: fields.denyGrantId ?? "",
    missingScopes: fields.missingScopes ?? [],
    deniedPrincipal: fields.deniedPrincipal ?? "",
    requiresApproval: fields.requiresApproval ?? false,
    requiresConfirmation: fields.requiresConfirmation ?? false,
    unlisted: fields.unlisted ?? false,
  };
}
