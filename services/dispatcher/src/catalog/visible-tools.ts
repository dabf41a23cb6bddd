import { type Principal, type Tool, ToolStatus } from "@toolmesh/proto";
import { type EntryKind, entryKind } from "./mcp-entries.js";
import type { PermissionGate } from "./permission-gate.js";
import type { ToolCatalog } from "./tool-catalog.js";

type Visibility = { catalog: ToolCatalog; policy: PermissionGate };

/** The enabled tools the caller may call, in no particular order. */
export function usableTools(deps: Visibility, principal: Principal): string[] {
  const { catalog, policy } = deps;
  const names: string[] = [];
  if (!policy.isReady) return names;
  for (const tool of catalog.all()) {
    if (!tool.spec || tool.spec.status === ToolStatus.DISABLED) continue;
    if (policy.decide(principal, catalog.policyView(tool)).allowed) names.push(tool.spec.name);
  }
  return names;
}

/** True when the entry is enabled and the caller's grants allow it. */
export function mayUse(deps: Visibility, principal: Principal, entry: Tool): boolean {
  if (!entry.spec || entry.spec.status === ToolStatus.DISABLED || !deps.policy.isReady)
    return false;
  return deps.policy.decide(principal, deps.catalog.policyView(entry)).allowed;
}

/**
 * What an MCP list shows the caller, by kind, in no particular order: the enabled entries its
 * grants allow; for tools, only those a listed grant allows (unlisted ones are found by search).
 */
export function listedEntries(deps: Visibility, principal: Principal, kind: EntryKind): Tool[] {
  const { catalog, policy } = deps;
  const entries: Tool[] = [];
  if (!policy.isReady) return entries;
  for (const entry of catalog.all()) {
    if (!entry.spec || entry.spec.status === ToolStatus.DISABLED || entryKind(entry) !== kind)
      continue;
    const decision = policy.decide(principal, catalog.policyView(entry));
    if (decision.allowed && !(kind === "tool" && decision.unlisted)) entries.push(entry);
  }
  return entries;
}
