import { authorityCases } from "./decision-cases-authority.js";
import { resourceCases } from "./decision-cases-resources.js";

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

/** Every case: resources, scopes and expiry first, then deny, principals and acting for a user. */
export const decisionTable: DecisionCase[] = [...resourceCases, ...authorityCases];
