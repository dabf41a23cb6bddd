import { create, type JsonObject, toJson } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import type { Principal } from "@toolmesh/auth";
import { alreadyExists, Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkScope, checkToolName, nameLimits } from "@toolmesh/names";
import {
  type ImportedMcpTool,
  ImportedMcpToolSchema,
  type ImportMcpServerRequest,
  type ImportMcpServerResponse,
  ImportMcpServerResponseSchema,
  McpImportChange,
  McpOperation,
  type McpRuntime as McpRuntimeSpec,
  type RegistryService,
  TaskSupport,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import type { McpRuntime, McpServerListing } from "../../runtimes/mcp-runtime.js";
import { entriesOf } from "./import-entries.js";
import { type ImportAuth, type ImportOAuthDeps, oauthForImport } from "./import-oauth.js";

export interface ImportDeps {
  mcp: McpRuntime;
  catalog: ToolCatalog;
  /** The Registry, called with the importing admin's own credential. */
  registry: RpcClient<typeof RegistryService>;
  /** For servers protected by OAuth: Permission and the callers' secrets. */
  oauth?: ImportOAuthDeps;
}

/**
 * Registers an MCP server's tools, prompts, resources and resource templates as `<prefix>.<name>`
 * with an `mcp` runtime (an empty prefix keeps the server's own names). Run again, it re-syncs:
 * changed definitions are updated and named, entries the server dropped are disabled.
 */
export async function importMcpServer(
  deps: ImportDeps,
  req: ImportMcpServerRequest,
  authorization: string,
  caller: Principal,
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
  let auth: ImportAuth | undefined;
  try {
    listing = await deps.mcp.listServer(runtime);
  } catch (error) {
    // A server over HTTP that refused may be protected by OAuth: list with the user's token.
    if (runtime.url !== "" && deps.oauth)
      auth = await oauthForImport(deps.oauth, req.prefix, runtime, caller, authorization);
    if (!auth) throw unlisted(error);
    try {
      listing = await deps.mcp.listServer(runtime, auth.values);
    } catch (again) {
      throw unlisted(again);
    }
  }
  const wanted = (spec: ToolSpec) => req.only.length === 0 || req.only.includes(operationOf(spec));
  const specs = entriesOf(req, listing).filter(({ spec }) => wanted(spec));
  // Each caller's token goes with every entry of a server protected by OAuth.
  if (auth) for (const { spec } of specs) spec.secrets = [auth.injection];
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

function unlisted(error: unknown): ConnectError {
  return new ConnectError(
    `cannot list the MCP server's tools: ${error instanceof Error ? error.message : String(error)}`,
    Code.Unavailable,
  );
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
  "secrets",
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
