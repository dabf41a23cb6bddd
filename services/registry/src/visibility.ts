import type { Principal } from "@toolmesh/auth";
import type { Tool } from "@toolmesh/proto";

/**
 * Decides which tools a principal without the admin or service role may see: an agent sees only
 * the tools it may use. `ready()` is false until the decision data is loaded; callers fail closed.
 */
export interface ToolVisibility {
  canUse(principal: Principal, tool: Tool): boolean;
  ready(): boolean;
}

/** Agents see nothing: the default when no permission data is wired. */
export const denyAll: ToolVisibility = {
  canUse: () => false,
  ready: () => true,
};

/** What policyVisibility needs of a PolicySnapshot (@toolmesh/policy). */
export interface PolicyDecider {
  readonly isReady: boolean;
  /** True while the Permission service has not created its bucket: no grants exist yet. */
  readonly noGrantsYet: boolean;
  decide(
    subject: { agentId: string; userId: string; roles: string[] },
    tool: { name: string; requiredScopes: string[]; groups: string[] },
    now?: Date,
  ): { allowed: boolean };
}

/**
 * An agent sees a tool when the grant snapshot allows it (and the user it acts for) to call it.
 * Before the permission bucket exists there are no grants, so nothing is visible.
 */
export function policyVisibility(policy: PolicyDecider): ToolVisibility {
  return {
    canUse(principal, tool) {
      if (!policy.isReady) return false;
      return policy.decide(
        { agentId: principal.agentId, userId: principal.userId, roles: principal.roles },
        {
          name: tool.spec?.name ?? "",
          requiredScopes: tool.spec?.requiredScopes ?? [],
          groups: tool.groups,
        },
      ).allowed;
    },
    ready() {
      return policy.isReady || policy.noGrantsYet;
    },
  };
}
