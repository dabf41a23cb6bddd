import { clone, create, type JsonObject, toJson } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import type { Principal } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkScope, checkToolName, nameLimits, withDigest } from "@toolmesh/names";
import {
  type ImportedMcpTool,
  ImportedMcpToolSchema,
  type ImportMcpServerRequest,
  type ImportMcpServerResponse,
  ImportMcpServerResponseSchema,
  McpImportChange,
  McpRuntimeSchema,
  type RegistryService,
  type SecretInjection,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import type { McpRuntime } from "../../runtimes/mcp-runtime.js";
import { type ImportAuth, type ImportOAuthDeps, oauthForImport } from "./import-oauth.js";

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
}

export interface ImportDeps {
  mcp: McpRuntime;
  catalog: ToolCatalog;
  /** The Registry, called with the importing admin's own credential. */
  registry: RpcClient<typeof RegistryService>;
  /** For servers protected by OAuth: Permission and the callers' secrets. */
  oauth?: ImportOAuthDeps;
}

/**
 * Registers an MCP server's tools as `<prefix>.<name>` with an `mcp` runtime. Run again, it
 * re-syncs: changed definitions are updated and named, tools the server dropped are disabled.
 */
export async function importMcpServer(
  deps: ImportDeps,
  req: ImportMcpServerRequest,
  authorization: string,
  caller: Principal,
): Promise<ImportMcpServerResponse> {
  checkToolName("prefix", req.prefix);
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

  let listed: Awaited<ReturnType<McpRuntime["listTools"]>>;
  let auth: ImportAuth | undefined;
  try {
    listed = await deps.mcp.listTools(runtime);
  } catch (error) {
    // A server over HTTP that refused may be protected by OAuth: list with the user's token.
    if (runtime.url !== "" && deps.oauth)
      auth = await oauthForImport(deps.oauth, req.prefix, runtime, caller, authorization);
    if (!auth) throw unlisted(error);
    try {
      listed = await deps.mcp.listTools(runtime, auth.values);
    } catch (again) {
      throw unlisted(again);
    }
  }
  const headers = { headers: { authorization } };
  const results: ImportedMcpTool[] = [];
  const offered = new Set<string>();
  for (const tool of listed.tools) {
    const spec = specOf(req, tool as ListedMcpTool, auth?.injection);
    offered.add(spec.name);
    const existing = await getTool(deps, spec.name, headers);
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
        mcpName: tool.name,
        change,
      }),
    );
  }
  for (const tool of deps.catalog.all()) {
    const spec = tool.spec;
    if (!spec?.name.startsWith(`${req.prefix}.`) || offered.has(spec.name)) continue;
    if (spec.runtime?.kind.case !== "mcp" || spec.status === ToolStatus.DISABLED) continue;
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
      }),
    );
  }
  return create(ImportMcpServerResponseSchema, {
    tools: results,
    serverName: listed.server.name,
    serverVersion: listed.server.version,
  });
}

function unlisted(error: unknown): ConnectError {
  return new ConnectError(
    `cannot list the MCP server's tools: ${error instanceof Error ? error.message : String(error)}`,
    Code.Unavailable,
  );
}

/** The registry spec of one listed MCP tool; with `auth`, each caller's token goes with it. */
export function specOf(
  req: ImportMcpServerRequest,
  tool: ListedMcpTool,
  auth?: SecretInjection,
): ToolSpec {
  const hints = tool.annotations ?? {};
  // MCP's defaults: a tool is not read-only, may be destructive and reaches an open world.
  const readOnly = hints.readOnlyHint ?? false;
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
    runtime: {
      kind: { case: "mcp", value: runtimeFor(req, tool.name) },
    },
    secrets: auth ? [auth] : [],
  });
}

/** The server's runtime, naming one of its tools. */
function runtimeFor(req: ImportMcpServerRequest, tool: string) {
  const runtime = req.runtime ? clone(McpRuntimeSchema, req.runtime) : create(McpRuntimeSchema);
  runtime.tool = tool;
  return runtime;
}

/** `<prefix>.<name>`: the MCP name in snake case, within the registry's name grammar and length. */
export function registryName(prefix: string, mcpName: string): string {
  const part =
    mcpName
      .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, "_")
      .replace(/^_+|_+$/g, "") || "tool";
  const name = `${prefix}.${part}`;
  return name.length <= nameLimits.toolName
    ? name
    : `${prefix}.${withDigest(part, mcpName).slice(-(nameLimits.toolName - prefix.length - 1))}`;
}

/** An MCP JSON Schema as the registry keeps it (draft 2020-12: an older `$schema` is dropped). */
function schemaOf(schema: unknown): JsonObject | undefined {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return undefined;
  const copy = JSON.parse(JSON.stringify(schema)) as JsonObject;
  if (typeof copy.$schema === "string" && !copy.$schema.includes("2020-12")) delete copy.$schema;
  return copy;
}

/** The parts of a tool an import owns. */
const OWNED = [
  "description",
  "inputSchema",
  "outputSchema",
  "idempotent",
  "sideEffects",
  "annotations",
  "runtime",
  "secrets",
] as const;

/** What an import owns of a tool, as comparable text. */
function definitionOf(spec: ToolSpec): string {
  const json = toJson(ToolSpecSchema, spec) as JsonObject;
  const owned = Object.fromEntries(OWNED.map((key) => [key, json[key]]));
  return JSON.stringify(canonical({ ...owned, scopes: json.requiredScopes }));
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
