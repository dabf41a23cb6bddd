import type { DecisionCase, TableTool } from "./decision-case.js";
import { authorityCases } from "./decision-cases-authority.js";
import { resourceCases } from "./decision-cases-resources.js";

export type { DecisionCase, TableGrant, TableTool } from "./decision-case.js";

/**
 * The decision table, as data: run against the pure decide() here and against the live Check
 * RPC of the Permission service (services/permission/test), which must agree case by case. It
 * lives in the testkit because both of those test folders use it.
 */

export const tableTools: TableTool[] = [
  { name: "data.query", requiredScopes: ["read:data"], groups: ["analytics"] },
  { name: "data.insert", requiredScopes: ["write:data"], groups: ["analytics"] },
  { name: "data.admin.drop", requiredScopes: ["admin:data", "write:data"], groups: [] },
  { name: "web.search", requiredScopes: [], groups: ["research"] },
  { name: "mail.send", requiredScopes: ["send:mail"], groups: ["comms"] },
];

/** Every case: resources, scopes and expiry first, then deny, principals and acting for a user. */
export const decisionTable: DecisionCase[] = [...resourceCases, ...authorityCases];
