// The shapes of the decision table (decision-table.ts), apart so its case files can import them.

/** A tool the cases refer to by name. */
export interface TableTool {
  name: string;
  requiredScopes: string[];
  groups: string[];
}

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

/** One row: who calls which tool under which grants, and what the decision must be. */
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
