import { type Principal, ToolStatus } from "@toolmesh/proto";
import type { PermissionGate } from "./permission-gate.js";
import type { ToolCatalog } from "./tool-catalog.js";

/** The enabled tools the caller may call, in no particular order. */
export function usableTools(
  deps: { catalog: ToolCatalog; policy: PermissionGate },
  principal: Principal,
): string[] {
  const { catalog, policy } = deps;
  const names: string[] = [];
  if (!policy.isReady) return names;
  for (const tool of catalog.all()) {
    if (!tool.spec || tool.spec.status === ToolStatus.DISABLED) continue;
    if (policy.decide(principal, catalog.policyView(tool)).allowed) names.push(tool.spec.name);
  }
  return names;
}
