import { clone, create, type JsonObject, toJson } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { alreadyExists, Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkScope, checkToolName, nameLimits, withDigest } from "@toolmesh/names";
import {
  type ImportedMcpTool,
  ImportedMcpToolSchema,
  type ImportMcpServerRequest,
  type ImportMcpServerResponse,
  ImportMcpServerResponseSchema,
  McpImportChange,
  McpOperation,
  McpRuntimeSchema,
  type McpRuntime as McpRuntimeSpec,
  type RegistryService,
  TaskSupport,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import type { McpRuntime, McpServerListing } from "../../runtimes/mcp-runtime.js";

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

export interface ImportDeps {
  mcp: McpRuntime;
  catalog: ToolCatalog;
  /** The Registry, called with the importing admin's own credential. */
  registry: RpcClient<typeof RegistryService>;
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

/**
 * Registers an MCP server's tools, prompts, resources and resource templates as `<prefix>.<name>`
 * with an `mcp` runtime (an empty prefix keeps the server's own names). Run again, it re-syncs:
 * changed definitions are updated and named, entries the server dropped are disabled.
 */
export async function importMcpServer(
  deps: ImportDeps,
  req: ImportMcpServerRequest,
  authorization: string,
): Promise<ImportMcpServerResponse> {
  if (req.prefix !== "") checkToolName("prefix", req.prefix);
  if (req.prefix.length > nameLimits.toolName - 8)
    throw invalidField("prefix", `at most ${nameLimits.toolName - 8} characters`);
  req.requiredScopes.forEach((scope, i) => {
    checkScope(`required_scopes[${i}]`, scope);
  });
  const runtime = req.runtime;
  if (!runtime || (runtime.url === "") === (runtime.command.trim() === ""))
    throw invalidField("runtime", "set exactly one of url (streamable HTTP) and command (stdio)");
  if (runtime.tool !== "")
    throw invalidField("runtime.tool", "leave it empty; each imported tool gets its own");

  let listing: McpServerListing;
  try {
    listing = await deps.mcp.listServer(runtime);
  } catch (error) {
    throw new ConnectError(
      `cannot list the MCP server's tools: ${error instanceof Error ? error.message : String(error)}`,
      Code.Unavailable,
    );
  }
  const wanted = (spec: ToolSpec) => req.only.length === 0 || req.only.includes(operationOf(spec));
  const specs = entriesOf(req, listing).filter(({ spec }) => wanted(spec));
  checkUris(deps.catalog, runtime, specs);
  const headers = { headers: { authorization } };
  const results: ImportedMcpTool[] = [];
  const offered = new Set<string>();
  for (const { spec, mcpName } of specs) {
    offered.add(spec.name);
    const existing = await getTool(deps, spec.name, headers);
    // A 2026-07-28 server lists no task support: what an admin set stays.
    if (existing && spec.taskSupport === TaskSupport.UNSPECIFIED)
      spec.taskSupport = existing.taskSupport;
    let change = McpImportChange.ADDED;
    if (existing) {
      const same =
        definitionOf(existing) === definitionOf(spec) && existing.status !== ToolStatus.DISABLED;
      change = same ? McpImportChange.UNCHANGED : McpImportChange.CHANGED;
    }
    if (!req.dryRun) {
      if (change === McpImportChange.ADDED)
        await deps.registry.registerTool({ tool: spec }, headers);
      else if (change === McpImportChange.CHANGED)
        await deps.registry.updateTool({ tool: spec }, headers);
    }
    results.push(
      create(ImportedMcpToolSchema, {
        tool: spec.name,
        mcpName,
        change,
        operation: operationOf(spec),
      }),
    );
  }
  for (const tool of deps.catalog.all()) {
    const spec = tool.spec;
    if (!spec || offered.has(spec.name) || spec.status === ToolStatus.DISABLED) continue;
    if (spec.runtime?.kind.case !== "mcp" || !sameImport(req, spec.name, spec.runtime.kind.value))
      continue;
    if (!wanted(spec)) continue;
    if (!req.dryRun)
      await deps.registry.updateTool(
        { tool: create(ToolSpecSchema, { ...spec, status: ToolStatus.DISABLED }) },
        headers,
      );
    results.push(
      create(ImportedMcpToolSchema, {
        tool: spec.name,
        mcpName: spec.runtime.kind.value.tool,
        change: McpImportChange.REMOVED,
        operation: operationOf(spec),
      }),
    );
  }
  return create(ImportMcpServerResponseSchema, {
    tools: results,
    serverName: listing.server.name,
    serverVersion: listing.server.version,
  });
}

/** Every registry entry of a server's listing, each with a name unique within the import. */
function entriesOf(
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

/**
 * Refuses a resource (or template) whose URI an entry of another import already serves: a URI
 * names one resource, and /mcp reads it from its one owner.
 */
function checkUris(
  catalog: ToolCatalog,
  runtime: McpRuntimeSpec,
  specs: { spec: ToolSpec }[],
): void {
  const addressed = (operation: McpOperation) =>
    operation === McpOperation.RESOURCE || operation === McpOperation.RESOURCE_TEMPLATE;
  const owners = new Map<string, string>();
  for (const tool of catalog.all()) {
    const mcp = tool.spec?.runtime?.kind;
    if (mcp?.case !== "mcp" || !addressed(mcp.value.operation)) continue;
    if (tool.spec?.status === ToolStatus.DISABLED || serverKey(mcp.value) === serverKey(runtime))
      continue;
    owners.set(`${mcp.value.operation}:${mcp.value.tool}`, tool.spec?.name ?? "");
  }
  for (const { spec } of specs) {
    const mcp = spec.runtime?.kind;
    if (mcp?.case !== "mcp" || !addressed(mcp.value.operation)) continue;
    const owner = owners.get(`${mcp.value.operation}:${mcp.value.tool}`);
    if (owner)
      throw alreadyExists(
        mcp.value.operation === McpOperation.RESOURCE ? "resource" : "resource template",
        mcp.value.tool,
        `registry entry "${owner}" of another MCP server serves it; disable that entry, or import this server without resources (only: tools and prompts)`,
      );
  }
}

/** Whether a registry entry came from this import: the same server, under the same prefix. */
function sameImport(req: ImportMcpServerRequest, name: string, mcp: McpRuntimeSpec): boolean {
  if (!req.runtime || serverKey(mcp) !== serverKey(req.runtime)) return false;
  return req.prefix === "" || name.startsWith(`${req.prefix}.`);
}

/** Which server a runtime reaches. */
function serverKey(runtime: McpRuntimeSpec): string {
  return JSON.stringify(runtime.url ? [runtime.url] : [runtime.command, runtime.args]);
}

function operationOf(spec: ToolSpec): McpOperation {
  const kind = spec.runtime?.kind;
  return kind?.case === "mcp" ? kind.value.operation : McpOperation.UNSPECIFIED;
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

/** The fields of an entry an import writes; the others (slugs, groups, timeout) are the admin's. */
const IMPORTED_FIELDS = [
  "description",
  "category",
  "inputSchema",
  "outputSchema",
  "requiredScopes",
  "idempotent",
  "sideEffects",
  "annotations",
  "runtime",
  "taskSupport",
] as const;

/** What an import owns of an entry, as comparable text. */
function definitionOf(spec: ToolSpec): string {
  const json = toJson(ToolSpecSchema, spec) as JsonObject;
  return JSON.stringify(canonical(Object.fromEntries(IMPORTED_FIELDS.map((f) => [f, json[f]]))));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  );
}

async function getTool(
  deps: ImportDeps,
  name: string,
  headers: { headers: { authorization: string } },
): Promise<ToolSpec | undefined> {
  try {
    return (await deps.registry.getTool({ name }, headers)).tool?.spec;
  } catch (error) {
    if (ConnectError.from(error).code === Code.NotFound) return undefined;
    throw error;
  }
}
