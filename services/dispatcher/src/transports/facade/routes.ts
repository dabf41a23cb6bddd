import {
  create,
  createRegistry,
  type JsonObject,
  type JsonValue,
  toJson,
} from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  DispatchRequestSchema,
  DispatchResponseSchema,
  type Principal,
  type RegistryService,
  RuntimeState,
} from "@toolmesh/proto";
import { readBody } from "@toolmesh/server";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import { usableTools } from "../../catalog/visible-tools.js";
import type { DispatchChain } from "../../chain/dispatch-chain.js";
import type { CheckDeps } from "../../chain/types.js";
import type { LocalRuntime } from "../../runtimes/local-runtime.js";
import { json } from "./http-errors.js";

export interface FacadeDeps extends CheckDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  local: LocalRuntime;
  /** The Registry, asked for groups with the caller's own credential. */
  registry: Client<typeof RegistryService>;
  maxBodyBytes: number;
  log: Logger;
}

const emptyRegistry = createRegistry();

/**
 * `GET /tools`: one table of what the caller may call — runtimes with tool counts, groups in
 * their usage order, and each tool with its runtime, groups and running state.
 */
export async function listTools(
  deps: FacadeDeps,
  principal: Principal,
  authorization: string,
): Promise<Response> {
  const names = usableTools(deps, principal).sort();
  const runtimes = new Map<string, number>();
  const tools = names.map((name) => {
    const tool = deps.catalog.get(name);
    const spec = tool?.spec;
    const runtime = spec?.runtime?.kind.case ?? "none";
    runtimes.set(runtime, (runtimes.get(runtime) ?? 0) + 1);
    return {
      name,
      description: spec?.description ?? "",
      runtime,
      groups: tool?.groups ?? [],
      side_effects: spec?.sideEffects ?? false,
      idempotent: spec?.idempotent ?? false,
      // Only local tools have a process of their own; the others run wherever their owner runs them.
      state:
        runtime === "local"
          ? RuntimeState[deps.local.statuses(name)[0]?.state ?? RuntimeState.STOPPED]
          : "EXTERNAL",
    };
  });
  const visible = new Set(names);
  let groups: JsonObject[];
  try {
    groups = await registryGroups(deps, visible, authorization);
  } catch (error) {
    // The table stays useful without the Registry: groups from the tools, usage order unknown.
    deps.log.warn({ err: error }, "GET /tools: the Registry's groups are unavailable");
    const members = new Map<string, string[]>();
    for (const tool of tools)
      for (const g of tool.groups) members.set(g, [...(members.get(g) ?? []), tool.name]);
    groups = [...members].sort().map(([name, list]) => ({ name, tools: list, usage_order: false }));
  }
  return json(200, {
    runtimes: [...runtimes].map(([kind, count]) => ({ kind, tool_count: count })),
    groups,
    tools,
  });
}

/** The Registry's groups (asked with the caller's credential) cut to the tools the caller may call. */
async function registryGroups(
  deps: FacadeDeps,
  visible: Set<string>,
  authorization: string,
): Promise<JsonObject[]> {
  const groups: JsonObject[] = [];
  let pageToken = "";
  do {
    const page = await deps.registry.listGroups(
      { pageSize: 500, pageToken },
      { headers: { authorization }, timeoutMs: 5000 },
    );
    for (const group of page.groups) {
      const usable = group.tools.filter((t) => visible.has(t));
      if (usable.length === 0) continue;
      groups.push({
        name: group.name,
        description: group.description,
        tools: usable,
        example: group.example,
        usage_order: true,
      });
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return groups;
}

/** `POST /run_tool {"tool_id", "params"}`: one call through the chain, answered as JSON. */
export async function runTool(
  deps: FacadeDeps,
  principal: Principal,
  request: Request,
): Promise<Response> {
  const text = await readBody(request.body, deps.maxBodyBytes);
  if (text === undefined)
    throw new ConnectError(
      `request body larger than ${deps.maxBodyBytes} bytes`,
      Code.ResourceExhausted,
    );
  let body: JsonValue;
  try {
    body = JSON.parse(text) as JsonValue;
  } catch {
    throw invalidField("body", 'is not JSON: send {"tool_id": "data.query", "params": {...}}');
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw invalidField("body", 'must be a JSON object: {"tool_id": "data.query", "params": {...}}');
  const {
    tool_id: toolId,
    params = {},
    trace_id = "",
    idempotency_key = "",
    timeout_ms = 0,
  } = body as Record<string, JsonValue>;
  if (typeof toolId !== "string" || toolId === "")
    throw invalidField("tool_id", "name the tool to call, for example data.query");
  if (params === null || typeof params !== "object" || Array.isArray(params))
    throw invalidField("params", "must be a JSON object of the tool's arguments");
  if (typeof trace_id !== "string" || typeof idempotency_key !== "string")
    throw invalidField("trace_id", "trace_id and idempotency_key must be strings");
  if (typeof timeout_ms !== "number" || !Number.isInteger(timeout_ms) || timeout_ms < 0)
    throw invalidField("timeout_ms", "must be a whole number of milliseconds");
  const response = await deps.chain.dispatch(
    create(DispatchRequestSchema, {
      tool: toolId,
      arguments: params as JsonObject,
      context: { traceId: trace_id, idempotencyKey: idempotency_key },
      timeoutMs: timeout_ms,
    }),
    principal,
    { signal: request.signal, traceparent: request.headers.get("traceparent") ?? undefined },
  );
  return json(
    200,
    toJson(DispatchResponseSchema, response, {
      useProtoFieldName: true,
      registry: emptyRegistry,
    }),
  );
}
