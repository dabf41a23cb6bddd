import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";

/**
 * The documented limits of names and ids. Every name or id is checked against its limit before
 * it reaches a NATS subject, a KV key or a file name.
 */
export const nameLimits = {
  /** Tool and group names. */
  toolName: 64,
  scope: 64,
  /** Agent, user and principal ids. */
  principalId: 128,
  role: 32,
} as const;

/** Lowercase dotted names: `data.query`, `reporting`; single dots between parts. */
const TOOL_NAME = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
/** `action:resource` such as `read:data` or `write:reports/*`. */
const SCOPE = /^[a-z][a-z0-9_-]*:[a-z0-9_.*/-]+$/;
/** Printable ASCII without spaces. */
const PRINCIPAL_ID = /^[\x21-\x7e]+$/;
const ROLE = /^[a-z][a-z0-9_-]*$/;

/** The scope that stands for every scope in a grant. */
export const ANY_SCOPE = "*";

/** True when `name` is a valid tool or group name. */
export function isToolName(name: string): boolean {
  return name.length <= nameLimits.toolName && TOOL_NAME.test(name);
}

/** Checks a tool or group name; INVALID_ARGUMENT naming `field` otherwise. */
export function checkToolName(field: string, name: string): void {
  if (name === "") throw invalidField(field, "is required");
  if (name.length > nameLimits.toolName)
    throw invalidField(
      field,
      `is ${name.length} characters; at most ${nameLimits.toolName} allowed`,
    );
  if (!TOOL_NAME.test(name))
    throw invalidField(
      field,
      `"${name}" is not a valid name: use lowercase letters, digits, _ - and single dots between parts, starting with a letter (for example data.query)`,
    );
}

/** Checks a scope (`read:data`); INVALID_ARGUMENT naming `field` otherwise. */
export function checkScope(field: string, scope: string): void {
  if (scope.length > nameLimits.scope)
    throw invalidField(field, `is ${scope.length} characters; at most ${nameLimits.scope} allowed`);
  if (!SCOPE.test(scope))
    throw invalidField(
      field,
      `"${scope}" is not a scope; expected action:resource such as read:data`,
    );
}

/** Checks an agent, user or principal id; `wildcard` allows `*` alone (every principal of a kind). */
export function checkPrincipalId(field: string, id: string, wildcard = false): void {
  if (id === "") throw invalidField(field, "must not be empty");
  if (id.length > nameLimits.principalId)
    throw invalidField(
      field,
      `is ${id.length} characters; at most ${nameLimits.principalId} allowed`,
    );
  if (!PRINCIPAL_ID.test(id))
    throw invalidField(field, "may contain only printable ASCII characters without spaces");
  if (!wildcard && id.includes("*")) throw invalidField(field, "must not contain *");
  if (wildcard && id.includes("*") && id !== "*")
    throw invalidField(field, "may be * (every principal of the kind) but not contain *");
}

/** Checks role names (`admin`, `data-reader`). */
export function checkRole(field: string, role: string): void {
  if (role.length > nameLimits.role || !ROLE.test(role))
    throw invalidField(
      field,
      `must be 1-${nameLimits.role} characters of a-z, 0-9, _ and -, starting with a letter`,
    );
}

/** OpenAI and Anthropic accept function names of this shape only. */
const PROVIDER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The name OpenAI and Anthropic see for a registry name: dots become `__` and, past 64
 * characters, a prefix plus 8 hex digits of the name's hash (still unique). MCP keeps the
 * registry name. The Registry exports with it and the Dispatcher maps replies back with it.
 */
export function providerToolName(name: string): string {
  const replaced = name.replaceAll(".", "__");
  return PROVIDER_NAME.test(replaced) ? replaced : withDigest(replaced, name);
}

/** A provider name made unique with 8 hex digits of the registry name's hash (`a.b` vs `a__b`). */
export function withDigest(exported: string, name: string): string {
  const digest = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${exported.slice(0, 55)}_${digest}`;
}
