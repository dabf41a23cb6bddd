import { hasRole, type Principal, Role, toolAgentIdentity } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { type ToolSpec, ToolStatus } from "@toolmesh/proto";

/**
 * What a caller with the `tool-agent` role (and not `admin`) may write: its own tools, named
 * `coding.*` and served over grpc (so it cannot make the Dispatcher start a command), and new
 * tools it built, registered DISABLED so that no model-written code runs before an operator has
 * looked at it and enabled it. Any other write is PERMISSION_DENIED, saying what is allowed.
 */
export function checkToolAgentWrite(by: Principal, spec: ToolSpec, write: "register" | "update") {
  if (hasRole(by, Role.Admin)) return;
  const own = spec.name.startsWith(toolAgentIdentity.toolPrefix);
  if (own) {
    if (spec.runtime?.kind.case !== "grpc")
      throw new ConnectError(
        `the tool agent's own tools (${toolAgentIdentity.toolPrefix}*) must have a grpc runtime; "${spec.name}" has ${spec.runtime?.kind.case ?? "none"}`,
        Code.PermissionDenied,
      );
    return;
  }
  if (write === "update")
    throw new ConnectError(
      `the tool agent may update only its own tools (${toolAgentIdentity.toolPrefix}*); an admin changes "${spec.name}"`,
      Code.PermissionDenied,
    );
  if (spec.status !== ToolStatus.DISABLED)
    throw new ConnectError(
      `a tool the tool agent builds is registered with status TOOL_STATUS_DISABLED, for an operator to enable; "${spec.name}" asked for ${ToolStatus[spec.status] ?? spec.status}`,
      Code.PermissionDenied,
    );
}
