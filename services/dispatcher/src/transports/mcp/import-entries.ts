import { clone, create, type JsonObject } from "@bufbuild/protobuf";
import { nameLimits, withDigest } from "@toolmesh/names";
import {
  type ImportMcpServerRequest,
  McpOperation,
  McpRuntimeSchema,
  TaskSupport,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import type { McpServerListing } from "../../runtimes/mcp-runtime.js";

/** The tool definition an MCP server lists (the parts an import keeps). */
export interface ListedMcpTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?:
    | {
        title?: string | undefined;
        readOnlyHint?: boolean | undefined;
        destructiveHint?: boolean | undefined;
        idempotentHint?: boolean | undefined;
        openWorldHint?: boolean | undefined;
      }
    | undefined;
  execution?: { taskSupport?: string | undefined } | undefined;
}

/** The registry category of each kind of entry an import writes besides tools. */
const CATEGORIES: Partial<Record<McpOperation, string>> = {
  [McpOperation.TOOL]: "mcp",
  [McpOperation.PROMPT]: "mcp.prompt",
  [McpOperation.RESOURCE]: "mcp.resource",
  [McpOperation.RESOURCE_TEMPLATE]: "mcp.resource_template",
};

/** What a completion/complete call passes: the argument and, optionally, those already chosen. */
const COMPLETE_SCHEMA: JsonObject = {
  type: "object",
  properties: {
    argument: {
      type: "object",
      properties: { name: { type: "string" }, value: { type: "string" } },
      required: ["name", "value"],
    },
    context: { type: "object" },
  },
  required: ["argument"],
};

/** Every registry entry of a server's listing, each with a name unique within the import. */
export function entriesOf(
  req: ImportMcpServerRequest,
  listing: McpServerListing,
): { spec: ToolSpec; mcpName: string }[] {
  const taken = new Set<string>();
  const unique = (mcpName: string, kind: string) => {
    let name = registryName(req.prefix, mcpName);
    // A prompt named like a tool (or a resource like a prompt) gets a name of its own.
    if (taken.has(name)) name = registryName(req.prefix, withDigest(mcpName, `${kind}:${mcpName}`));
    taken.add(name);
    return name;
  };
  const out: { spec: ToolSpec; mcpName: string }[] = [];
  for (const tool of listing.tools) {
    const listed = tool as unknown as ListedMcpTool;
    const spec = specOf(req, listed);
    spec.name = unique(listed.name, "tool");
    out.push({ spec, mcpName: listed.name });
  }
  const kinds: {
    operation: McpOperation;
    items: JsonObject[];
    target: (item: JsonObject) => string;
    properties: (item: JsonObject) => JsonObject;
  }[] = [
    {
      operation: McpOperation.PROMPT,
      items: listing.prompts,
      target: (prompt) => String(prompt.name ?? ""),
      properties: (prompt) => ({ arguments: promptArguments(prompt), complete: COMPLETE_SCHEMA }),
    },
    {
      operation: McpOperation.RESOURCE,
      items: listing.resources,
      target: (resource) => String(resource.uri ?? ""),
      properties: () => ({ subscribe: { type: "boolean" } }),
    },
    {
      operation: McpOperation.RESOURCE_TEMPLATE,
      items: listing.resourceTemplates,
      target: (template) => String(template.uriTemplate ?? ""),
      properties: () => ({
        uri: { type: "string" },
        subscribe: { type: "boolean" },
        complete: COMPLETE_SCHEMA,
      }),
    },
  ];
  for (const kind of kinds) {
    for (const item of kind.items) {
      const target = kind.target(item);
      const name = unique(String(item.name || target), McpOperation[kind.operation]);
      const inputSchema = {
        type: "object",
        properties: kind.properties(item),
        additionalProperties: false,
      };
      out.push({
        spec: entrySpec(req, name, kind.operation, target, item, inputSchema),
        mcpName: target,
      });
    }
  }
  return out;
}

/** The registry spec of one listed MCP tool. */
export function specOf(req: ImportMcpServerRequest, tool: ListedMcpTool): ToolSpec {
  const hints = tool.annotations ?? {};
  // MCP's defaults: a tool is not read-only, may be destructive and reaches an open world.
  const readOnly = hints.readOnlyHint ?? false;
  const taskSupport = tool.execution?.taskSupport;
  return create(ToolSpecSchema, {
    name: registryName(req.prefix, tool.name),
    description: tool.description ?? "",
    category: "mcp",
    inputSchema: schemaOf(tool.inputSchema) ?? { type: "object" },
    ...(tool.outputSchema ? { outputSchema: schemaOf(tool.outputSchema) } : {}),
    requiredScopes: req.requiredScopes,
    idempotent: hints.idempotentHint ?? false,
    sideEffects: !readOnly,
    status: ToolStatus.ACTIVE,
    annotations: {
      title: tool.title ?? hints.title ?? "",
      destructive: !readOnly && (hints.destructiveHint ?? true),
      openWorld: hints.openWorldHint ?? true,
    },
    taskSupport:
      taskSupport === "required"
        ? TaskSupport.REQUIRED
        : taskSupport === "optional"
          ? TaskSupport.OPTIONAL
          : TaskSupport.UNSPECIFIED,
    runtime: {
      kind: { case: "mcp", value: runtimeFor(req, tool.name, McpOperation.TOOL) },
    },
  });
}

/** The registry entry of a prompt, resource or template: read-only, its listing kept. */
function entrySpec(
  req: ImportMcpServerRequest,
  name: string,
  operation: McpOperation,
  target: string,
  listed: JsonObject,
  inputSchema: JsonObject,
): ToolSpec {
  const runtime = runtimeFor(req, target, operation);
  runtime.listing = listed;
  return create(ToolSpecSchema, {
    name,
    description: typeof listed.description === "string" ? listed.description : "",
    category: CATEGORIES[operation] ?? "mcp",
    inputSchema,
    requiredScopes: req.requiredScopes,
    idempotent: true,
    sideEffects: false,
    status: ToolStatus.ACTIVE,
    annotations: {
      title: typeof listed.title === "string" ? listed.title : "",
      destructive: false,
      openWorld: true,
    },
    runtime: { kind: { case: "mcp", value: runtime } },
  });
}

/** A prompt's arguments as the schema of `arguments`: strings, the required ones required. */
function promptArguments(prompt: JsonObject): JsonObject {
  const listed = Array.isArray(prompt.arguments) ? prompt.arguments : [];
  const properties: JsonObject = {};
  const required: string[] = [];
  for (const argument of listed) {
    if (argument === null || typeof argument !== "object" || Array.isArray(argument)) continue;
    const name = String(argument.name ?? "");
    if (name === "") continue;
    properties[name] = {
      type: "string",
      ...(typeof argument.description === "string" ? { description: argument.description } : {}),
    };
    if (argument.required === true) required.push(name);
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/** The server's runtime, naming one of its tools, prompts, resources or templates. */
function runtimeFor(req: ImportMcpServerRequest, target: string, operation: McpOperation) {
  const runtime = req.runtime ? clone(McpRuntimeSchema, req.runtime) : create(McpRuntimeSchema);
  runtime.tool = target;
  runtime.operation = operation;
  return runtime;
}

/**
 * `<prefix>.<name>` (the name alone for an empty prefix): the MCP name in snake case, within the
 * registry's name grammar and length.
 */
export function registryName(prefix: string, mcpName: string): string {
  let part =
    mcpName
      .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, "_")
      .replace(/^_+|_+$/g, "") || "tool";
  if (prefix === "" && !/^[a-z]/.test(part)) part = `mcp_${part}`;
  const name = prefix === "" ? part : `${prefix}.${part}`;
  if (name.length <= nameLimits.toolName) return name;
  const room = nameLimits.toolName - (prefix === "" ? 0 : prefix.length + 1);
  const short = withDigest(part, mcpName).slice(-room);
  return prefix === "" ? `mcp_${short}`.slice(0, nameLimits.toolName) : `${prefix}.${short}`;
}

/** An MCP JSON Schema as the registry keeps it (draft 2020-12: an older `$schema` is dropped). */
function schemaOf(schema: unknown): JsonObject | undefined {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return undefined;
  const copy = JSON.parse(JSON.stringify(schema)) as JsonObject;
  if (typeof copy.$schema === "string" && !copy.$schema.includes("2020-12")) delete copy.$schema;
  return copy;
}
