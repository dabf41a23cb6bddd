import type { PolicyTool } from "@toolmesh/policy";
import type { Decision } from "@toolmesh/proto";

/** The permission decision for a caller and a tool; PolicySnapshot from @toolmesh/policy. */
export interface PermissionGate {
  readonly isReady: boolean;
  decide(
    subject: { agentId: string; userId: string; roles: string[] },
    tool: PolicyTool,
    now?: Date,
  ): Decision;
}
