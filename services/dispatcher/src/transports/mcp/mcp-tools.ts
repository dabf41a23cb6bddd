import { create, type JsonObject } from "@bufbuild/protobuf";
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  awaitsApproval,
  CallStatus,
  DispatchRequestSchema,
  type DispatchResponse,
  type Principal,
  type Tool,
} from "@toolmesh/proto";
import { listedEntries } from "../../catalog/visible-tools.js";
import type { SearchDeps } from "../search-tools.js";
import {
  dispatchForMcp,
  inputRequiredResult,
  type McpCallDeps,
  missingCapability,
} from "./mcp-calls.js";
import { eventRelay } from "./mcp-events.js";
import { serveFederation } from "./mcp-federation.js";
import { pageOf } from "./mcp-pages.js";
import { callSearchTool, SEARCH_TOOL, SEARCH_TOOL_NAME } from "./mcp-search.js";
import {
  createdTask,
  type McpTaskDeps,
  needsApproval,
  serveTasks,
  TASKS_CAPABILITY,
  TaskingServer,
} from "./mcp-tasks.js";

export interface McpToolsDeps extends SearchDeps, McpCallDeps {
  version: string;
  /** Held calls as tasks, for 2025-11-25 clients. */
  tasks: McpTaskDeps;
}

/** What a handler needs of its HTTP request. */
export interface McpCaller {
  principal: Principal;
  /**
   * The request's protocol era. Tasks are offered to `legacy` (2025-11-25) requests only: the
   * 2026-07-28 revision moved them to an extension with another wire shape.
   */
  era: "legacy" | "modern";
  /** Aborts when the HTTP request ends; bounds how long tasks/result waits. */
  signal: AbortSignal;
}

/**
 * The MCP server of one request: tools/list shows the tools the caller's grants allow, in name
 * order with cursor pagination; tools/call runs the whole chain. Built per request (both
 * protocol eras are stateless here), so nothing of one caller reaches another.
 */
export function createMcpToolServer(deps: McpToolsDeps, caller: McpCaller): Server {
  const tasks = caller.era === "legacy";
  const server = new (tasks ? TaskingServer : Server)(
    { name: "toolmesh", version: deps.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        completions: {},
        ...(tasks ? { tasks: TASKS_CAPABILITY, logging: {} } : {}),
      },
      instructions:
        "toolmesh tools: each call is authenticated, validated against the tool's schema, permission-checked and recorded.",
    },
  );
  server.setRequestHandler("tools/list", (request) => {
    const names = [
      SEARCH_TOOL_NAME,
      ...listedEntries(deps, caller.principal, "tool").flatMap((tool) =>
        tool.spec && tool.spec.name !== SEARCH_TOOL_NAME ? [tool.spec.name] : [],
      ),
    ];
    const { page, nextCursor } = pageOf(
      names,
      (name) => name,
      request.params?.cursor,
      "tools/list",
    );
    const tools = page.flatMap((name) => {
      if (name === SEARCH_TOOL_NAME) return [SEARCH_TOOL];
      const tool = deps.catalog.get(name);
      if (!tool?.spec) return [];
      // A call that waits for an approver may run as a task; any other runs at once.
      return tasks && needsApproval(deps, caller.principal, tool)
        ? [{ ...mcpToolOf(tool), execution: { taskSupport: "optional" } }]
        : [mcpToolOf(tool)];
    });
    return { tools, ...(nextCursor ? { nextCursor } : {}) } as never;
  });
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args } = request.params;
    if (name === SEARCH_TOOL_NAME)
      return callSearchTool(deps, caller.principal, (args ?? {}) as JsonObject) as never;
    if (tasks && request.params.task !== undefined) return callAsTask(deps, caller, request.params);
    let response: DispatchResponse;
    try {
      response = await dispatchForMcp(
        deps,
        { ...caller, server, ctx },
        create(DispatchRequestSchema, { tool: name, arguments: (args ?? {}) as JsonObject }),
        eventRelay(ctx, caller.era, request.params._meta?.progressToken),
      );
    } catch (error) {
      if (error instanceof ProtocolError) throw error;
      const refusal = ConnectError.from(error);
      // An unknown tool is a protocol error in MCP; every other refusal is a result the model reads.
      if (refusal.code === Code.NotFound)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, refusal.rawMessage);
      return errorResult(refusal.rawMessage) as never;
    }
    const asked = inputRequiredResult(response);
    if (asked) return asked as never;
    if (response.error?.code === "missing_client_capability")
      throw missingCapability((response.error.details ?? {}) as JsonObject, response.error.message);
    return callResult(toolNamed(deps, name), response) as never;
  });
  serveFederation(server, deps, caller);
  if (caller.era === "legacy")
    // Stateless: no level outlives this request; an imported tool's log messages all reach the
    // request that made its call.
    server.setRequestHandler("logging/setLevel", () => ({}) as never);
  if (tasks)
    serveTasks(server, deps.tasks, caller, (tool, response) =>
      callResult(toolNamed(deps, tool), response),
    );
  return server;
}

/**
 * A task-augmented tools/call: the call is dispatched as any other, and answered with its task.
 * Only a call that waits for an approver may be a task (the spec's -32601 for any other tool); a
 * call refused before it was held creates no task and is a JSON-RPC error.
 */
async function callAsTask(
  deps: McpToolsDeps,
  caller: McpCaller,
  params: { name: string; arguments?: Record<string, unknown> | undefined },
): Promise<never> {
  const tool = toolNamed(deps, params.name);
  if (tool?.spec && !needsApproval(deps, caller.principal, tool))
    throw new ProtocolError(
      ProtocolErrorCode.MethodNotFound,
      `tool "${params.name}" runs at once, so it cannot be called as a task: only tools that wait for an approver have execution.taskSupport in tools/list; call it without "task"`,
    );
  let response: DispatchResponse;
  try {
    response = await deps.chain.dispatch(
      create(DispatchRequestSchema, {
        tool: params.name,
        arguments: (params.arguments ?? {}) as JsonObject,
      }),
      caller.principal,
      { signal: caller.signal },
    );
  } catch (error) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, ConnectError.from(error).rawMessage);
  }
  return (await createdTask(deps.tasks, response)) as never;
}

function toolNamed(deps: McpToolsDeps, name: string): Tool | undefined {
  return deps.catalog.get(name) ?? deps.catalog.get(deps.catalog.resolve(name));
}

/** A registry tool as MCP lists it, with annotations derived from the registry's fields. */
export function mcpToolOf(tool: Tool): JsonObject {
  const spec = tool.spec;
  if (!spec) return {};
  const readOnly = !spec.sideEffects;
  const notes = spec.annotations;
  return {
    name: spec.name,
    ...(notes?.title ? { title: notes.title } : {}),
    description: spec.description,
    inputSchema: spec.inputSchema ?? { type: "object" },
    ...(spec.outputSchema && Object.keys(spec.outputSchema).length > 0
      ? { outputSchema: spec.outputSchema }
      : {}),
    annotations: {
      ...(notes?.title ? { title: notes.title } : {}),
      readOnlyHint: readOnly,
      destructiveHint: !readOnly && (notes?.destructive ?? false),
      idempotentHint: spec.idempotent,
      openWorldHint: notes?.openWorld ?? false,
    },
  };
}

/** A call's outcome as a CallToolResult: structuredContent plus a text copy, or isError. */
export function callResult(tool: Tool | undefined, response: DispatchResponse): JsonObject {
  switch (response.status) {
    case CallStatus.SUCCESS: {
      const output = response.output ?? {};
      const blocks = contentBlocks(output);
      // A tool without an output schema that answers MCP content blocks (`{"content": [...]}`,
      // as imported MCP tools and media tools do) has them passed through as they are.
      if (blocks && !hasOutputSchema(tool)) return { content: blocks };
      return {
        content: [{ type: "text", text: JSON.stringify(output) }],
        structuredContent: output,
      };
    }
    case CallStatus.PENDING:
      // A call held for approval is not an error: the model learns to wait, and for which call.
      // It is text only, since structuredContent would have to match the tool's output schema;
      // for a tool that has one, the spec wants structured content in every result that is not
      // an error (and SDK clients refuse one without), so there it is marked isError.
      return {
        content: [
          {
            type: "text",
            text: awaitsApproval(response)
              ? `awaiting approval (call_id ${response.callId}): ${response.error?.message ?? ""}`
              : `accepted: the tool finishes the call later (call_id ${response.callId}); its outcome is broadcast as a callback`,
          },
        ],
        ...(hasOutputSchema(tool) ? { isError: true } : {}),
      };
    default:
      return errorResult(
        `${response.error?.code ?? "error"}: ${response.error?.message ?? "the tool failed"}`,
      );
  }
}

function errorResult(text: string): JsonObject {
  return { content: [{ type: "text", text }], isError: true };
}

function hasOutputSchema(tool: Tool | undefined): boolean {
  const schema = tool?.spec?.outputSchema;
  return schema !== undefined && Object.keys(schema).length > 0;
}

function contentBlocks(output: JsonObject): JsonObject[] | undefined {
  const content = output.content;
  if (!Array.isArray(content) || content.length === 0 || Object.keys(output).length !== 1)
    return undefined;
  const blocks = content.filter(
    (block): block is JsonObject =>
      block !== null &&
      typeof block === "object" &&
      !Array.isArray(block) &&
      typeof block.type === "string",
  );
  return blocks.length === content.length ? blocks : undefined;
}
