import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadFieldSchema,
  type FieldViolation,
  PermissionDenialSchema,
  RetryInfoSchema,
  ToolNotFoundSchema,
  ValidationFailureSchema,
} from "@toolmesh/proto";

import { byNearness, didYouMean } from "./suggest.js";

export { Code, ConnectError } from "@connectrpc/connect";
export { byNearness, didYouMean, editDistance, nearNames } from "./suggest.js";

/** INVALID_ARGUMENT about one request field, with a BadField detail naming it. */
export function invalidField(field: string, description: string): ConnectError {
  return new ConnectError(`${field}: ${description}`, Code.InvalidArgument, undefined, [
    { desc: BadFieldSchema, value: { field, description } },
  ]);
}

/** INVALID_ARGUMENT for a value that fails a JSON Schema: one line per failing path. */
export function validationFailed(subject: string, violations: FieldViolation[]): ConnectError {
  const lines = violations.map((v) => `- ${v.path || "/"}: ${v.message}`);
  return new ConnectError(
    `${subject} failed validation:\n${lines.join("\n")}`,
    Code.InvalidArgument,
    undefined,
    [
      {
        desc: ValidationFailureSchema,
        value: create(ValidationFailureSchema, { subject, violations }),
      },
    ],
  );
}

/**
 * NOT_FOUND for an unknown tool, always with a ToolNotFound detail listing the tools the caller
 * may use, nearest to the requested name first. The message either lists them (`list`: an agent
 * must pick one) or suggests the near ones (`suggest`: someone browsing the registry).
 */
export function toolNotFound(
  requested: string,
  available: Iterable<string>,
  style: "list" | "suggest" = "list",
): ConnectError {
  const availableTools = byNearness(requested, available);
  let hint: string;
  if (style === "suggest") {
    hint = didYouMean(requested, availableTools, "tools");
  } else {
    const shown = availableTools.slice(0, 20);
    hint =
      shown.length === 0
        ? "no tools are available to you"
        : `available tools: ${shown.join(", ")}${availableTools.length > shown.length ? ", …" : ""}`;
  }
  return new ConnectError(`tool "${requested}" not found; ${hint}`, Code.NotFound, undefined, [
    { desc: ToolNotFoundSchema, value: { requested, availableTools } },
  ]);
}

/** NOT_FOUND for a named object of a kind whose names the caller may list (groups …). */
export function notFoundAmong(
  kind: string,
  name: string,
  candidates: string[],
  plural: string,
): ConnectError {
  return notFound(kind, name, didYouMean(name, candidates, plural));
}

/** PERMISSION_DENIED for a tool call, saying what is missing. */
export function permissionDenied(detail: {
  resource: string;
  reason: string;
  missingScopes?: string[];
  denyGrantId?: string;
  principal?: string;
}): ConnectError {
  return new ConnectError(detail.reason, Code.PermissionDenied, undefined, [
    {
      desc: PermissionDenialSchema,
      value: {
        resource: detail.resource,
        reason: detail.reason,
        missingScopes: detail.missingScopes ?? [],
        denyGrantId: detail.denyGrantId ?? "",
        principal: detail.principal ?? "",
      },
    },
  ]);
}

/** NOT_FOUND for a named object. */
export function notFound(kind: string, name: string, hint = ""): ConnectError {
  return new ConnectError(`${kind} "${name}" not found${hint ? `; ${hint}` : ""}`, Code.NotFound);
}

/** ALREADY_EXISTS for a named object. */
export function alreadyExists(kind: string, name: string, hint = ""): ConnectError {
  return new ConnectError(
    `${kind} "${name}" already exists${hint ? `; ${hint}` : ""}`,
    Code.AlreadyExists,
  );
}

/** The code name a caller sees, such as `PERMISSION_DENIED`, for audit records and batch results. */
export function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** A detail an error carries out (a proto message and its schema). */
export type OutgoingDetail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];

/**
 * RESOURCE_EXHAUSTED (or `code`) with a google.rpc.RetryInfo detail saying when to try again,
 * and any details of the refusal's own (a BudgetExceeded, a CircuitOpen).
 */
export function retryLater(
  message: string,
  waitMs: number,
  options: { code?: Code; details?: OutgoingDetail[] } = {},
): ConnectError {
  const ms = Math.max(0, Math.ceil(waitMs));
  return new ConnectError(message, options.code ?? Code.ResourceExhausted, undefined, [
    ...(options.details ?? []),
    {
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, {
        retryDelay: create(DurationSchema, {
          seconds: BigInt(Math.floor(ms / 1000)),
          nanos: (ms % 1000) * 1_000_000,
        }),
      }),
    },
  ]);
}
