import { hasRole, type Principal, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkPrincipalId, checkRole, checkToolName } from "@toolmesh/names";
import { globProblem } from "@toolmesh/policy";
import { SecretHolderKind, type SecretScope, SecretToolKind } from "@toolmesh/proto";
import { RUNTIME_WORDS } from "@toolmesh/vault";

/** Bounds of what the vault stores. */
export const vaultLimits = {
  /** A secret is a key or a token, not a file: 64 KiB at most. */
  valueBytes: 64 * 1024,
} as const;

/** Checks a secret or OAuth provider name: the grammar of tool names. */
export function checkVaultName(field: string, name: string): void {
  checkToolName(field, name);
}

/** Validates a secret's scope; INVALID_ARGUMENT naming the first bad field. */
export function validateScope(scope: SecretScope | undefined): SecretScope {
  if (!scope) throw invalidField("scope", "is required: which tools, and whose calls");
  switch (scope.toolKind) {
    case SecretToolKind.TOOL:
      checkToolName("scope.tool", scope.tool);
      break;
    case SecretToolKind.GLOB: {
      const problem = globProblem(scope.tool);
      if (problem) throw invalidField("scope.tool", `glob ${problem}`);
      break;
    }
    case SecretToolKind.RUNTIME:
      if (!(RUNTIME_WORDS as readonly string[]).includes(scope.tool))
        throw invalidField("scope.tool", `must be a runtime kind: ${RUNTIME_WORDS.join(", ")}`);
      break;
    default:
      throw invalidField("scope.tool_kind", "must be TOOL, GLOB or RUNTIME");
  }
  switch (scope.holderKind) {
    case SecretHolderKind.EVERYONE:
      if (scope.holder !== "") throw invalidField("scope.holder", "must be empty for EVERYONE");
      break;
    case SecretHolderKind.ROLE:
      checkRole("scope.holder", scope.holder);
      break;
    case SecretHolderKind.AGENT:
    case SecretHolderKind.USER:
      checkPrincipalId("scope.holder", scope.holder, false);
      break;
    default:
      throw invalidField("scope.holder_kind", "must be EVERYONE, ROLE, AGENT or USER");
  }
  return scope;
}

/** Checks a secret value: UTF-8 text of 1 to 64 KiB; the message never shows it. */
export function checkSecretValue(value: string): void {
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes === 0) throw invalidField("value", "must not be empty (DeleteSecret removes a secret)");
  if (bytes > vaultLimits.valueBytes)
    throw invalidField("value", `is ${bytes} bytes; at most ${vaultLimits.valueBytes} allowed`);
}

/**
 * Whether the caller may manage a secret of this scope: an admin any, a caller acting for a user
 * only those scoped to that user; PERMISSION_DENIED saying which otherwise.
 */
export function requireSecretOwner(caller: Principal, scope: SecretScope): void {
  if (hasRole(caller, Role.Admin)) return;
  if (
    caller.userId !== "" &&
    scope.holderKind === SecretHolderKind.USER &&
    scope.holder === caller.userId
  )
    return;
  throw new ConnectError(
    caller.userId
      ? `your token acts for user "${caller.userId}": it may manage secrets scoped to that user only (holder_kind USER, holder "${caller.userId}"); others need the role admin`
      : "managing secrets needs the role admin, or a token that acts for a user (for that user's own secrets)",
    Code.PermissionDenied,
  );
}

/** The user a caller names or acts for: admins may name anyone, others only their own user. */
export function userOf(caller: Principal, named: string, field = "user_id"): string {
  if (named !== "") {
    checkPrincipalId(field, named, false);
    if (named !== caller.userId && !hasRole(caller, Role.Admin))
      throw new ConnectError(
        `your token acts for user "${caller.userId || "(none)"}"; naming another user needs the role admin`,
        Code.PermissionDenied,
      );
    return named;
  }
  if (caller.userId === "")
    throw new ConnectError(
      `${field} is empty and your token acts for no user: name the user (admins), or call with a token that acts for one`,
      Code.FailedPrecondition,
    );
  return caller.userId;
}
