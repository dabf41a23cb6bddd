import { createHash } from "node:crypto";
import { invalidField } from "@toolmesh/errors";

/**
 * The documented limits of names and ids, in characters. Every name or id a caller sends is
 * checked against its limit before it reaches a NATS subject, a KV key, a file name or a log
 * line, so a 10 KB "name" is refused with INVALID_ARGUMENT instead of travelling on.
 */
export const nameLimits = {
  /** Tool names (`data.query`). */
  toolName: 64,
  /** Group names, the same grammar as tools. */
  groupName: 64,
  /** Scopes (`read:data`). */
  scope: 64,
  /** Agent, user and principal ids (API keys, JWT `sub`, grants). */
  principalId: 128,
  /** Role names. */
  role: 32,
  /** Call ids a caller chooses (context.call_id); generated ones are UUIDs. */
  callId: 128,
  /** The parent call id of a nested call. */
  parentId: 128,
  /** W3C trace ids: exactly 32 lowercase hex characters. */
  traceId: 32,
  /** Idempotency keys (context.idempotency_key). */
  idempotencyKey: 256,
  /** Grant ids and API key ids, as the Permission service issues them. */
  issuedId: 40,
  /** The label of an API key. */
  keyName: 128,
  /** Knowledge-hub slugs stored on a tool. */
  knowhubSlug: 256,
} as const;

/** One entry of nameLimits. */
export type NameKind = keyof typeof nameLimits;

/** Lowercase dotted names: `data.query`, `reporting`; single dots between parts. */
const TOOL_NAME = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
/** `action:resource` such as `read:data` or `write:reports/*`. */
const SCOPE = /^[a-z][a-z0-9_-]*:[a-z0-9_.*/-]+$/;
/** Printable ASCII without spaces: principal ids, call ids, idempotency keys. */
const PRINTABLE = /^[\x21-\x7e]+$/;
const ROLE = /^[a-z][a-z0-9_-]*$/;
const TRACE_ID = /^[0-9a-f]{32}$/;

/** The scope that stands for every scope in a grant. */
export const ANY_SCOPE = "*";

/** True when `value` fits the documented limit of its kind. */
export function withinLimit(kind: NameKind, value: string): boolean {
  return value.length <= nameLimits[kind];
}

/**
 * Checks only the length of a name or id against its limit; INVALID_ARGUMENT naming `field`
 * and the limit otherwise. The cheapest check, done before anything else looks at the value.
 */
export function checkLength(field: string, kind: NameKind, value: string): void {
  const limit = nameLimits[kind];
  if (value.length > limit)
    throw invalidField(field, `is ${value.length} characters; at most ${limit} allowed`);
}

/**
 * A value to file in a record when the request's own was over its limit (and is refused): the
 * first `limit` characters and an ellipsis, so the record says what was sent without carrying it.
 */
export function clipped(kind: NameKind, value: string): string {
  const limit = nameLimits[kind];
  return value.length <= limit ? value : `${value.slice(0, limit)}…`;
}

/** True when `name` is a valid tool or group name. */
export function isToolName(name: string): boolean {
  return name.length <= nameLimits.toolName && TOOL_NAME.test(name);
}

/** Checks a tool or group name; INVALID_ARGUMENT naming `field` otherwise. */
export function checkToolName(field: string, name: string): void {
  if (name === "") throw invalidField(field, "is required");
  checkLength(field, "toolName", name);
  if (!TOOL_NAME.test(name))
    throw invalidField(
      field,
      `"${name}" is not a valid name: use lowercase letters, digits, _ - and single dots between parts, starting with a letter (for example data.query)`,
    );
}

/** Checks a scope (`read:data`); INVALID_ARGUMENT naming `field` otherwise. */
export function checkScope(field: string, scope: string): void {
  checkLength(field, "scope", scope);
  if (!SCOPE.test(scope))
    throw invalidField(
      field,
      `"${scope}" is not a scope; expected action:resource such as read:data`,
    );
}

/** Checks an agent, user or principal id; `wildcard` allows `*` alone (every principal of a kind). */
export function checkPrincipalId(field: string, id: string, wildcard = false): void {
  if (id === "") throw invalidField(field, "must not be empty");
  checkLength(field, "principalId", id);
  if (!PRINTABLE.test(id))
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

/**
 * Checks a caller-chosen id (call id, parent id, idempotency key): at most its limit, printable
 * ASCII without spaces. Empty is allowed (the server picks one or none).
 */
export function checkCallerId(
  field: string,
  kind: "callId" | "parentId" | "idempotencyKey",
  id: string,
): void {
  checkLength(field, kind, id);
  if (id !== "" && !PRINTABLE.test(id))
    throw invalidField(field, "may contain only printable ASCII characters without spaces");
}

/** True when `id` is a W3C trace id (32 lowercase hex, not all zero). */
export function isTraceId(id: string): boolean {
  return TRACE_ID.test(id) && id !== "0".repeat(32);
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
export {
  callTimeOf,
  GENERATED_CALL_ID_PREFIX,
  generatedCallTime,
  idKey,
  newCallId,
  newTraceId,
  traceKey,
} from "./call-ids.js";
