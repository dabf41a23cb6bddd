/**
 * The decision table, as data: run against the pure decide() here and against the live Check
 * RPC of the Permission service (services/permission/test), which must agree case by case. It
 * lives in the testkit because both of those test folders use it.
 */

/** A tool the cases refer to by name. */
export interface TableTool {
  name: string;
  requiredScopes: string[];
  groups: string[];
}

export const tableTools: TableTool[] = [
  { name: "data.query", requiredScopes: ["read:data"], groups: ["analytics"] },
  { name: "data.insert", requiredScopes: ["write:data"], groups: ["analytics"] },
  { name: "data.admin.drop", requiredScopes: ["admin:data", "write:data"], groups: [] },
  { name: "web.search", requiredScopes: [], groups: ["research"] },
  { name: "mail.send", requiredScopes: ["send:mail"], groups: ["comms"] },
];

/** A grant: `who` is `agent:<id>`, `user:<id>` or `role:<id>`; `on` is `tool:`, `glob:` or `group:`. */
export interface TableGrant {
  id: string;
  who: string;
  on: string;
  scopes: string[];
  effect?: "allow" | "deny";
  /** Expiry relative to the decision time; unset never expires. 0 expires exactly then. */
  expiresInMs?: number;
  enabled?: false;
}

export interface DecisionCase {
  name: string;
  agent: string;
  user?: string;
  roles?: string[];
  tool: string;
  grants: TableGrant[];
  allowed: boolean;
  /** Expected missing_scopes when denied for want of an allow grant. */
  missing?: string[];
  /** Expected deny_grant_id (table id). */
  deny?: string;
  /** Expected denied_principal. */
  denied?: string;
  /** Expected matched_grant_ids (table ids), when allowed. */
  matched?: string[];
  /** A fragment the reason must contain. */
  reason?: string;
}

const HOUR = 60 * 60 * 1000;

export const decisionTable: DecisionCase[] = [
  // exact tool resources and scopes
  {
    name: "exact tool grant with the required scope allows",
    agent: "a1",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "no grants at all denies and names the scope",
    agent: "a1",
    tool: "data.insert",
    grants: [],
    allowed: false,
    missing: ["write:data"],
    denied: "agent:a1",
    reason: 'agent "a1" has no allow grant covering scope write:data on tool "data.insert"',
  },
  {
    name: "grant for another tool does not apply",
    agent: "a1",
    tool: "data.insert",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["write:data"] }],
    allowed: false,
    missing: ["write:data"],
  },
  {
    name: "grant with the wrong scope leaves the scope missing",
    agent: "a1",
    tool: "data.insert",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.insert", scopes: ["read:data"] }],
    allowed: false,
    missing: ["write:data"],
  },
  {
    name: "scope * covers every required scope",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.admin.drop", scopes: ["*"] }],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "two required scopes, one covered: the other is missing",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.admin.drop", scopes: ["write:data"] }],
    allowed: false,
    missing: ["admin:data"],
    reason: "scope admin:data",
  },
  {
    name: "two required scopes, none covered: both missing",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [],
    allowed: false,
    missing: ["admin:data", "write:data"],
    reason: "scopes admin:data, write:data",
  },
  {
    name: "two required scopes covered by two grants: both matched",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.admin.drop", scopes: ["write:data"] },
      { id: "g2", who: "agent:a1", on: "glob:data.**", scopes: ["admin:data"] },
    ],
    allowed: true,
    matched: ["g1", "g2"],
  },
  {
    name: "tool without required scopes: any applicable allow grant allows",
    agent: "a1",
    tool: "web.search",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:web.search", scopes: ["read:web"] }],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "tool without required scopes and no grant denies",
    agent: "a1",
    tool: "web.search",
    grants: [],
    allowed: false,
    missing: [],
    reason: 'agent "a1" has no allow grant on tool "web.search"',
  },
  // globs
  {
    name: "glob data.* matches data.query",
    agent: "a1",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:data.*", scopes: ["read:data"] }],
    allowed: true,
  },
  {
    name: "glob data.* does not cross segments (data.admin.drop)",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:data.*", scopes: ["*"] }],
    allowed: false,
    missing: ["admin:data", "write:data"],
  },
  {
    name: "glob data.** crosses segments",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:data.**", scopes: ["*"] }],
    allowed: true,
  },
  {
    name: "glob ** matches every tool",
    agent: "a1",
    tool: "mail.send",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:**", scopes: ["send:mail"] }],
    allowed: true,
  },
  {
    name: "glob * matches only one-segment names",
    agent: "a1",
    tool: "mail.send",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:*", scopes: ["*"] }],
    allowed: false,
    missing: ["send:mail"],
  },
  {
    name: "glob with * inside a segment (data.q*)",
    agent: "a1",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:data.q*", scopes: ["read:data"] }],
    allowed: true,
  },
  {
    name: "glob for another namespace does not match",
    agent: "a1",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:mail.*", scopes: ["*"] }],
    allowed: false,
    missing: ["read:data"],
  },
  {
    name: "glob *.send matches mail.send",
    agent: "a1",
    tool: "mail.send",
    grants: [{ id: "g1", who: "agent:a1", on: "glob:*.send", scopes: ["send:mail"] }],
    allowed: true,
  },
  // groups
  {
    name: "group grant covers a tool of the group",
    agent: "a1",
    tool: "data.insert",
    grants: [{ id: "g1", who: "agent:a1", on: "group:analytics", scopes: ["write:data"] }],
    allowed: true,
  },
  {
    name: "group grant does not cover a tool outside the group",
    agent: "a1",
    tool: "mail.send",
    grants: [{ id: "g1", who: "agent:a1", on: "group:analytics", scopes: ["*"] }],
    allowed: false,
    missing: ["send:mail"],
  },
  {
    name: "group deny overrides an exact allow",
    agent: "a1",
    tool: "web.search",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:web.search", scopes: ["*"] },
      { id: "g2", who: "agent:a1", on: "group:research", scopes: ["*"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
    denied: "agent:a1",
  },
  // expiry and enabled
  {
    name: "grant expiring in an hour is live",
    agent: "a1",
    tool: "data.query",
    grants: [
      {
        id: "g1",
        who: "agent:a1",
        on: "tool:data.query",
        scopes: ["read:data"],
        expiresInMs: HOUR,
      },
    ],
    allowed: true,
  },
  {
    name: "grant expiring exactly now is expired",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"], expiresInMs: 0 },
    ],
    allowed: false,
    missing: ["read:data"],
  },
  {
    name: "grant that expired a second ago is ignored",
    agent: "a1",
    tool: "data.query",
    grants: [
      {
        id: "g1",
        who: "agent:a1",
        on: "tool:data.query",
        scopes: ["read:data"],
        expiresInMs: -1000,
      },
    ],
    allowed: false,
    missing: ["read:data"],
  },
  {
    name: "expired deny no longer refuses",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      {
        id: "g2",
        who: "agent:a1",
        on: "tool:data.query",
        scopes: ["*"],
        effect: "deny",
        expiresInMs: -1000,
      },
    ],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "disabled allow grant is ignored",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"], enabled: false },
    ],
    allowed: false,
    missing: ["read:data"],
  },
  {
    name: "disabled deny grant is ignored",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      {
        id: "g2",
        who: "agent:a1",
        on: "tool:data.query",
        scopes: ["*"],
        effect: "deny",
        enabled: false,
      },
    ],
    allowed: true,
  },
  // deny
  {
    name: "deny with * overrides allow",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "glob:data.*", scopes: ["*"] },
      { id: "g2", who: "agent:a1", on: "tool:data.query", scopes: ["*"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
    denied: "agent:a1",
    reason: "refuses agent",
  },
  {
    name: "deny covering a required scope overrides allow",
    agent: "a1",
    tool: "data.admin.drop",
    grants: [
      { id: "g1", who: "agent:a1", on: "glob:data.**", scopes: ["*"] },
      { id: "g2", who: "agent:a1", on: "glob:data.**", scopes: ["admin:data"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
    reason: "scope admin:data",
  },
  {
    name: "deny without scope overlap does not apply",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "agent:a1", on: "tool:data.query", scopes: ["write:data"], effect: "deny" },
    ],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "deny on a tool without required scopes applies whatever its scopes",
    agent: "a1",
    tool: "web.search",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:web.search", scopes: ["*"] },
      { id: "g2", who: "agent:a1", on: "tool:web.search", scopes: ["read:web"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
  },
  {
    name: "deny for another agent does not apply",
    agent: "a1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "agent:a2", on: "tool:data.query", scopes: ["*"], effect: "deny" },
    ],
    allowed: true,
  },
  {
    name: "deny to every agent (agent:*) refuses",
    agent: "a1",
    tool: "mail.send",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:mail.send", scopes: ["send:mail"] },
      { id: "g2", who: "agent:*", on: "glob:mail.*", scopes: ["*"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
  },
  // principals and roles
  {
    name: "unknown agent has no grants",
    agent: "ghost",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: false,
    missing: ["read:data"],
    denied: "agent:ghost",
  },
  {
    name: "agent:* grant allows any agent",
    agent: "a9",
    tool: "data.query",
    grants: [{ id: "g1", who: "agent:*", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: true,
  },
  {
    name: "role grant allows an agent with the role",
    agent: "a1",
    roles: ["agent", "analyst"],
    tool: "data.query",
    grants: [{ id: "g1", who: "role:analyst", on: "group:analytics", scopes: ["read:data"] }],
    allowed: true,
    matched: ["g1"],
  },
  {
    name: "role grant does not apply without the role",
    agent: "a1",
    roles: ["agent"],
    tool: "data.query",
    grants: [{ id: "g1", who: "role:analyst", on: "group:analytics", scopes: ["read:data"] }],
    allowed: false,
    missing: ["read:data"],
  },
  {
    name: "role:* applies to any agent with a role",
    agent: "a1",
    roles: ["agent"],
    tool: "web.search",
    grants: [{ id: "g1", who: "role:*", on: "tool:web.search", scopes: ["*"] }],
    allowed: true,
  },
  {
    name: "role:* does not apply to an agent without roles",
    agent: "a1",
    roles: [],
    tool: "web.search",
    grants: [{ id: "g1", who: "role:*", on: "tool:web.search", scopes: ["*"] }],
    allowed: false,
  },
  {
    name: "role deny overrides the agent's own allow",
    agent: "a1",
    roles: ["intern"],
    tool: "data.insert",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.insert", scopes: ["write:data"] },
      { id: "g2", who: "role:intern", on: "glob:**", scopes: ["write:data"], effect: "deny" },
    ],
    allowed: false,
    deny: "g2",
    denied: "agent:a1",
  },
  {
    name: "scopes combine across an agent grant and a role grant",
    agent: "a1",
    roles: ["dba"],
    tool: "data.admin.drop",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.admin.drop", scopes: ["write:data"] },
      { id: "g2", who: "role:dba", on: "glob:data.admin.*", scopes: ["admin:data"] },
    ],
    allowed: true,
    matched: ["g1", "g2"],
  },
  {
    name: "a user grant alone does not allow the agent",
    agent: "a1",
    tool: "data.query",
    grants: [{ id: "g1", who: "user:a1", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: false,
    denied: "agent:a1",
  },
  // agent acting for a user: both must be allowed
  {
    name: "agent for user: both allowed",
    agent: "a1",
    user: "u1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "user:u1", on: "group:analytics", scopes: ["read:data"] },
    ],
    allowed: true,
    matched: ["g1", "g2"],
  },
  {
    name: "agent for user: user lacks the scope (no confused deputy)",
    agent: "a1",
    user: "u1",
    tool: "data.insert",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.insert", scopes: ["write:data"] },
      { id: "g2", who: "user:u1", on: "tool:data.insert", scopes: ["read:data"] },
    ],
    allowed: false,
    missing: ["write:data"],
    denied: "user:u1",
    reason: 'user "u1", for whom agent "a1" acts, has no allow grant covering scope write:data',
  },
  {
    name: "agent for user: agent lacks the grant though the user has it",
    agent: "a1",
    user: "u1",
    tool: "data.query",
    grants: [{ id: "g2", who: "user:u1", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: false,
    missing: ["read:data"],
    denied: "agent:a1",
  },
  {
    name: "agent for user: a deny on the user refuses",
    agent: "a1",
    user: "u1",
    tool: "mail.send",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:mail.send", scopes: ["*"] },
      { id: "g2", who: "user:u1", on: "tool:mail.send", scopes: ["*"] },
      { id: "g3", who: "user:u1", on: "group:comms", scopes: ["send:mail"], effect: "deny" },
    ],
    allowed: false,
    deny: "g3",
    denied: "user:u1",
  },
  {
    name: "agent for user: the agent's role grants do not count for the user",
    agent: "a1",
    user: "u1",
    roles: ["analyst"],
    tool: "data.query",
    grants: [{ id: "g1", who: "role:analyst", on: "tool:data.query", scopes: ["read:data"] }],
    allowed: false,
    denied: "user:u1",
  },
  {
    name: "agent for user: user:* grant allows any user",
    agent: "a1",
    user: "u7",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "user:*", on: "glob:data.*", scopes: ["read:data"] },
    ],
    allowed: true,
  },
  {
    name: "agent for user: a grant to another user does not help",
    agent: "a1",
    user: "u1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "user:u2", on: "tool:data.query", scopes: ["read:data"] },
    ],
    allowed: false,
    denied: "user:u1",
  },
  {
    name: "agent for user: user grant expired exactly now",
    agent: "a1",
    user: "u1",
    tool: "data.query",
    grants: [
      { id: "g1", who: "agent:a1", on: "tool:data.query", scopes: ["read:data"] },
      { id: "g2", who: "user:u1", on: "tool:data.query", scopes: ["read:data"], expiresInMs: 0 },
    ],
    allowed: false,
    denied: "user:u1",
  },
];
