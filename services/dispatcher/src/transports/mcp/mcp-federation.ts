import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type Server,
  type ServerContext,
  UriTemplate,
} from "@modelcontextprotocol/server";
import {
  CallStatus,
  DispatchRequestSchema,
  McpOperation,
  type Tool,
  ToolStatus,
} from "@toolmesh/proto";
import { type EntryKind, entryKind } from "../../catalog/mcp-entries.js";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import { listedEntries } from "../../catalog/visible-tools.js";
import type { CheckDeps } from "../../chain/types.js";
import {
  dispatchForMcp,
  inputRequiredResult,
  type McpCallDeps,
  type McpRequestOf,
  protocolErrorOf,
  refusalOf,
} from "./mcp-calls.js";
import { pageOf } from "./mcp-pages.js";

export type FederationDeps = CheckDeps & McpCallDeps;

/**
 * The prompts, resources and resource templates of imported MCP servers on /mcp: listed as the
 * caller's grants allow (one it may not use is invisible), and each prompts/get, resources/read,
 * subscription and completion a call of its registry entry through the whole chain, with its
 * records. A resource keeps the URI its server gave it.
 */
export function serveFederation(
  server: Server,
  deps: FederationDeps,
  caller: Omit<McpRequestOf, "ctx" | "server">,
): void {
  const from = (ctx: ServerContext): McpRequestOf => ({ ...caller, server, ctx });
  const listed = (kind: EntryKind, cursor: string | undefined, list: string) =>
    pageOf(listedEntries(deps, caller.principal, kind), nameOf, cursor, list);

  server.setRequestHandler("prompts/list", (request) => {
    const { page, nextCursor } = listed("prompt", request.params?.cursor, "prompts/list");
    return {
      prompts: page.map((p) => ({ ...listingOf(p), name: nameOf(p) })),
      ...next(nextCursor),
    } as never;
  });
  server.setRequestHandler("resources/list", (request) => {
    const { page, nextCursor } = listed("resource", request.params?.cursor, "resources/list");
    return {
      resources: page.map((r) => ({ ...listingOf(r), name: nameOf(r), uri: targetOf(r) })),
      ...next(nextCursor),
    } as never;
  });
  server.setRequestHandler("resources/templates/list", (request) => {
    const { page, nextCursor } = listed(
      "template",
      request.params?.cursor,
      "resources/templates/list",
    );
    return {
      resourceTemplates: page.map((t) => ({
        ...listingOf(t),
        name: nameOf(t),
        uriTemplate: targetOf(t),
      })),
      ...next(nextCursor),
    } as never;
  });

  server.setRequestHandler("prompts/get", async (request, ctx) => {
    const name = request.params.name;
    const notFound = () =>
      new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `prompt not found: ${JSON.stringify(name.slice(0, 200))}; prompts/list shows the prompts you may use`,
      );
    const entry = entryNamed(deps.catalog, name, "prompt");
    if (!entry) throw notFound();
    return (await run(
      deps,
      from(ctx),
      entry,
      { arguments: request.params.arguments ?? {} },
      notFound,
    )) as never;
  });

  server.setRequestHandler("resources/read", async (request, ctx) => {
    const uri = request.params.uri;
    const notFound = () => new ResourceNotFoundError(uri);
    const found = resourceAt(deps.catalog, uri);
    if (!found) throw notFound();
    return (await run(deps, from(ctx), found.entry, found.args, notFound)) as never;
  });

  server.setRequestHandler("completion/complete", async (request, ctx) => {
    const ref = request.params.ref as { type: string; name?: string; uri?: string };
    const entry =
      ref.type === "ref/prompt"
        ? entryNamed(deps.catalog, ref.name ?? "", "prompt")
        : templateNamed(deps.catalog, ref.uri ?? "");
    const notFound = () =>
      new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `nothing to complete for ${JSON.stringify(ref).slice(0, 300)}: name a prompt of prompts/list or a template of resources/templates/list`,
      );
    if (!entry) throw notFound();
    const complete = {
      argument: request.params.argument,
      ...(request.params.context ? { context: request.params.context } : {}),
    } as JsonObject;
    return (await run(deps, from(ctx), entry, { complete }, notFound)) as never;
  });

  if (caller.era !== "legacy") return;
  // 2025-11-25 only: the 2026-07-28 revision replaced both with subscriptions/listen.
  for (const [method, subscribe] of [
    ["resources/subscribe", true],
    ["resources/unsubscribe", false],
  ] as const) {
    server.setRequestHandler(method, async (request, ctx) => {
      const uri = request.params.uri;
      const notFound = () => new ResourceNotFoundError(uri);
      const found = resourceAt(deps.catalog, uri);
      if (!found) throw notFound();
      await run(deps, from(ctx), found.entry, { ...found.args, subscribe }, notFound);
      return {} as never;
    });
  }
}

/** One call of a prompt's or resource's entry, its result as the MCP result (or its question). */
async function run(
  deps: FederationDeps,
  from: McpRequestOf,
  entry: Tool,
  args: JsonObject,
  notFound: () => ProtocolError,
): Promise<JsonObject> {
  let response: Awaited<ReturnType<typeof dispatchForMcp>>;
  try {
    response = await dispatchForMcp(
      deps,
      from,
      create(DispatchRequestSchema, { tool: nameOf(entry), arguments: args }),
    );
  } catch (error) {
    throw refusalOf(error, notFound);
  }
  const asked = inputRequiredResult(response);
  if (asked) return asked;
  if (response.status === CallStatus.SUCCESS) return response.output ?? {};
  if (response.status === CallStatus.PENDING)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `${response.error?.code ?? "pending"}: ${response.error?.message ?? "the call has not ended"} (call_id ${response.callId})`,
    );
  throw protocolErrorOf(response);
}

/** The entry of a URI: a resource with exactly that URI, else the first template it matches. */
function resourceAt(
  catalog: ToolCatalog,
  uri: string,
): { entry: Tool; args: JsonObject } | undefined {
  let template: Tool | undefined;
  for (const entry of catalog.all()) {
    const kind = entryKind(entry);
    if (!enabled(entry) || (kind !== "resource" && kind !== "template")) continue;
    if (kind === "resource" && targetOf(entry) === uri) return { entry, args: {} };
    if (kind === "template" && !template && matches(targetOf(entry), uri)) template = entry;
  }
  return template ? { entry: template, args: { uri } } : undefined;
}

function matches(uriTemplate: string, uri: string): boolean {
  try {
    return new UriTemplate(uriTemplate).match(uri) !== null;
  } catch {
    return false;
  }
}

function entryNamed(catalog: ToolCatalog, name: string, kind: EntryKind): Tool | undefined {
  const entry = catalog.get(name);
  return entry && enabled(entry) && entryKind(entry) === kind ? entry : undefined;
}

function templateNamed(catalog: ToolCatalog, uriTemplate: string): Tool | undefined {
  for (const entry of catalog.all())
    if (enabled(entry) && entryKind(entry) === "template" && targetOf(entry) === uriTemplate)
      return entry;
  return undefined;
}

function enabled(entry: Tool): boolean {
  return entry.spec !== undefined && entry.spec.status !== ToolStatus.DISABLED;
}

function nameOf(entry: Tool): string {
  return entry.spec?.name ?? "";
}

/** The prompt's name, resource's URI or template's URI template on its server. */
function targetOf(entry: Tool): string {
  const kind = entry.spec?.runtime?.kind;
  return kind?.case === "mcp" ? kind.value.tool : "";
}

/** The object its server listed for an entry. */
function listingOf(entry: Tool): JsonObject {
  const kind = entry.spec?.runtime?.kind;
  return kind?.case === "mcp" && kind.value.operation !== McpOperation.TOOL
    ? { ...(kind.value.listing ?? {}) }
    : {};
}

function next(cursor: string | undefined): { nextCursor?: string } {
  return cursor ? { nextCursor: cursor } : {};
}
