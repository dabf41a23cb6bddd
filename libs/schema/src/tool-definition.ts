import { createHash } from "node:crypto";
import { create, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type Runtime,
  RuntimeSchema,
  type Tool,
  type ToolDefinition,
  ToolDefinitionSchema,
  type ToolSpec,
} from "@toolmesh/proto";
import { canonicalJson, schemaHash } from "./canonical.js";

/** How many definitions a tool keeps (Tool.history): enough to name what changed under a pin. */
export const TOOL_HISTORY_LIMIT = 16;

/** The parts of a definition a pinned call is protected against, as Tool.history names them. */
export type DefinitionPart = "schema" | "description" | "runtime";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The hashes of a tool spec's schemas, description and runtime, and of the three together. */
export function toolDefinition(
  spec: ToolSpec,
  revision: bigint,
  time: Timestamp | undefined,
): ToolDefinition {
  const schema = schemaHash(spec.inputSchema, spec.outputSchema);
  const description = sha256(spec.description);
  const runtime = sha256(canonicalJson(spec.runtime ? runtimeDefinition(spec.runtime) : null));
  return create(ToolDefinitionSchema, {
    revision,
    version: spec.version,
    definitionHash: sha256(`${schema}\n${description}\n${runtime}`),
    schemaHash: schema,
    descriptionHash: description,
    runtimeHash: runtime,
    ...(time ? { time } : {}),
  });
}

/**
 * How many instances of a tool run, and when, is capacity, not what the tool is: changing it
 * breaks no pin and keeps its cached results.
 */
const CAPACITY_FIELDS = ["minInstances", "maxInstances", "warmHours", "healthIntervalMs"];

/** A runtime as its definition hash reads it: its JSON without the capacity fields. */
function runtimeDefinition(runtime: Runtime): JsonValue {
  const json = toJson(RuntimeSchema, runtime) as Record<string, Record<string, JsonValue>>;
  for (const kind of ["local", "docker"]) {
    const value = json[kind];
    if (value) for (const field of CAPACITY_FIELDS) delete value[field];
  }
  return json;
}

/** What differs between two definitions, in a fixed order. */
export function definitionChanges(from: ToolDefinition, to: ToolDefinition): DefinitionPart[] {
  const parts: DefinitionPart[] = [];
  if (from.schemaHash !== to.schemaHash) parts.push("schema");
  if (from.descriptionHash !== to.descriptionHash) parts.push("description");
  if (from.runtimeHash !== to.runtimeHash) parts.push("runtime");
  return parts;
}

/**
 * Sets a tool's definition hash and history for the spec it now holds: the new definition is
 * appended (with what changed) when it differs from the last one kept; the oldest fall off.
 */
export function recordDefinition(tool: Tool, previous: Tool | undefined): void {
  if (!tool.spec) return;
  const next = toolDefinition(tool.spec, tool.revision, tool.updatedAt);
  const history = [...(previous?.history ?? [])];
  const last = history.at(-1);
  tool.definitionHash = next.definitionHash;
  if (last?.definitionHash === next.definitionHash) {
    tool.history = history;
    return;
  }
  if (last) next.changed = definitionChanges(last, next);
  else if (previous?.spec) {
    // A tool stored before histories existed: its old definition is the base of the first entry.
    next.changed = definitionChanges(
      toolDefinition(previous.spec, previous.revision, previous.updatedAt),
      next,
    );
  }
  history.push(next);
  tool.history = history.slice(-TOOL_HISTORY_LIMIT);
}

/**
 * Why a call pinned to `pin` (a definition or schema hash the caller was given) may not run the
 * tool as it is now; undefined when the pin still holds.
 */
export function pinBroken(tool: Tool, pin: string): string | undefined {
  if (pin === tool.definitionHash) return undefined;
  const current = tool.spec ? toolDefinition(tool.spec, tool.revision, undefined) : undefined;
  if (!current) return "the tool has no definition";
  if (pin === current.schemaHash) return undefined; // a schema pin holds while the schemas do
  const pinned = [...tool.history]
    .reverse()
    .find((d) => d.definitionHash === pin || d.schemaHash === pin);
  if (!pinned)
    return `the pinned definition is not among the last ${TOOL_HISTORY_LIMIT} of this tool (its schema, description or runtime changed since); fetch the tool again`;
  const changes = definitionChanges(pinned, current);
  const schemaOnly = pinned.definitionHash !== pin;
  const named = schemaOnly ? changes.filter((c) => c === "schema") : changes;
  return `its ${named.join(", ")} changed since version ${pinned.version} (revision ${pinned.revision}); now version ${tool.spec?.version} (revision ${tool.revision})`;
}
