import { create, type JsonObject } from "@bufbuild/protobuf";
import { ProtocolError, ProtocolErrorCode, type Server } from "@modelcontextprotocol/server";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  awaitsApproval,
  type BackendEvent,
  CallStatus,
  type DispatchRequest,
  DispatchRequestSchema,
  type DispatchResponse,
  type Principal,
  type Tool,
} from "@toolmesh/proto";
import { listedEntries } from "../../catalog/visible-tools.js";
import { DeferredCaller } from "../inputs/deferred-caller.js";
import { ANSWERS_EVERYTHING } from "../inputs/input-desk.js";
import type { ReplicaLink } from "../replica-link.js";
import type { SearchDeps } from "../search-tools.js";
import {
  continueTaskable,
  startTaskable,
  type Taskable,
  taskSupportOf,
} from "../tasks/taskable.js";
import {
  deferredCallerOf,
  dispatchForMcp,
  inputRequiredResult,
  type McpCallDeps,
  type McpRequestOf,
  missingCapability,
} from "./mcp-calls.js";
import { eventRelay } from "./mcp-events.js";
import { serveFederation } from "./mcp-federation.js";
import { pageOf } from "./mcp-pages.js";
import { callSearchTool, SEARCH_TOOL, SEARCH_TOOL_NAME } from "./mcp-search.js";
import {
  createdTask,
  type McpTaskDeps,
  serveTasks,
  TASKS_CAPABILITY,
  waitsForSomeone,
} from "./mcp-tasks.js";
import {
  createTaskResult,
  serveTasksExtension,
  TASKS_EXTENSION,
  TaskingServer,
  takesTasks,
  tasksRequired,
} from "./mcp-tasks-ext.js";

export interface McpToolsDeps extends SearchDeps, McpCallDeps {
  version: string;
  /** The other replicas, for answers POSTed to this one (none in-process). */
  link?: ReplicaLink | undefined;
  /** MCP tasks: calls that run on without their request. */
  tasks: McpTaskDeps;
}

/** What a handler needs of its HTTP request. */
export interface McpCaller {
  principal: Principal;
  /** The request's protocol era: 2025-11-25 (`legacy`) or 2026-07-28 (`modern`). */
  era: "legacy" | "modern";
  /** Aborts when the HTTP request ends; bounds how long tasks/result waits. */
  signal: AbortSignal;
}

/**
 * How long a call of a task-capable tool may take before it becomes a task (2026-07-28): a call
 * that ends, or asks its caller something, sooner answers in the request itself.
 */
const TASK_AFTER_MS = 700;
/** How long a task-augmented 2025-11-25 call may take to be refused before its task answers. */
const REFUSAL_WINDOW_MS = 150;

/**
 * The MCP server of one request: tools/list shows the tools the caller's grants allow, in name
 * order with cursor pagination; tools/call runs the whole chain, and may become a task (the
 * 2025-11-25 tasks utility, the 2026-07-28 Tasks extension). Built per request (both protocol
 * eras are stateless here), so nothing of one caller reaches another.
 */
export function createMcpToolServer(deps: McpToolsDeps, caller: McpCaller): Server {
  const legacy = caller.era === "legacy";
  const server = new TaskingServer(
    { name: "toolmesh", version: deps.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        completions: {},
        ...(legacy
          ? { tasks: TASKS_CAPABILITY, logging: {} }
          : { extensions: { [TASKS_EXTENSION]: {} } }),
      } as never,
      instructions:
        "toolmesh tools: each call is authenticated, validated against the tool's schema, permission-checked and recorded. search_tools finds tools tools/list does not show.",
    },
  );
  const support = (tool: Tool | undefined) =>
    taskSupportOf(tool, tool?.spec ? waitsForSomeone(deps, caller.principal, tool) : false);
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
      const taskSupport = support(tool);
      return taskSupport === "forbidden"
        ? [mcpToolOf(tool)]
        : [{ ...mcpToolOf(tool), execution: { taskSupport } }];
    });
    return { tools, ...(nextCursor ? { nextCursor } : {}) } as never;
  });
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const { name, arguments: args } = request.params;
    if (name === SEARCH_TOOL_NAME)
      return callSearchTool(deps, caller.principal, (args ?? {}) as JsonObject) as never;
    const tool = toolNamed(deps, name);
    const taskSupport = support(tool);
    const req = create(DispatchRequestSchema, {
      tool: name,
      arguments: (args ?? {}) as JsonObject,
    });
    const from = { ...caller, server, ctx };
    const onEvent = eventRelay(ctx, caller.era, request.params._meta?.progressToken);
    let response: DispatchResponse;
    try {
      const asTask = legacy
        ? request.params.task !== undefined
        : takesTasks(ctx) && taskSupport !== "forbidden";
      if (legacy && asTask && taskSupport === "forbidden")
        throw new ProtocolError(
          ProtocolErrorCode.MethodNotFound,
          `tool "${name}" runs at once, so it cannot be called as a task: only tools with execution.taskSupport in tools/list can; call it without "task"`,
        );
      if (taskSupport === "required" && !asTask)
        throw legacy
          ? new ProtocolError(
              ProtocolErrorCode.MethodNotFound,
              `tool "${name}" runs only as a task: call it with "task"`,
            )
          : tasksRequired(`tool "${name}"`);
      if (asTask) {
        const ran = await runAsTask(deps, from, req, legacy, onEvent);
        if ("task" in ran)
          return (legacy ? createdTask(ran.task) : createTaskResult(ran.task)) as never;
        response = ran.response;
      } else {
        response = await dispatchForMcp(deps, from, req, onEvent);
      }
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
    return callResult(tool, response) as never;
  });
  serveFederation(server, deps, caller);
  const toResult = (name: string, response: DispatchResponse) =>
    callResult(toolNamed(deps, name), response);
  if (legacy) {
    serveTasks(server, deps.tasks, caller, toResult);
    // Stateless: no level outlives this request; an imported tool's log messages all reach the
    // request that made its call.
    server.setRequestHandler("logging/setLevel", () => ({}) as never);
  } else {
    serveTasksExtension(server, deps.tasks.tasks, caller.principal, toResult);
  }
  return server;
}

/**
 * A call that may run as a task: a 2025-11-25 client that asked gets a task unless the call is
 * refused at once; a 2026-07-28 client gets one when the call is held, or still runs after
 * TASK_AFTER_MS (its rounds of input before that are answered in the request).
 */
async function runAsTask(
  deps: McpToolsDeps,
  from: McpRequestOf,
  req: DispatchRequest,
  legacy: boolean,
  onEvent: ((event: BackendEvent) => void) | undefined,
): Promise<Taskable> {
  const taskable = { chain: deps.chain, inputs: deps.inputs, tasks: deps.tasks.tasks };
  const options = { signal: from.ctx.mcpReq.signal, ...(onEvent ? { onEvent } : {}) };
  if (legacy)
    return startTaskable(
      taskable,
      req,
      from.principal,
      options,
      new DeferredCaller(ANSWERS_EVERYTHING),
      REFUSAL_WINDOW_MS,
      true,
    );
  const state = from.ctx.mcpReq.requestState<unknown>();
  const responses = (from.ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
  if (typeof state === "string" && !deps.confirmations.isState(state)) {
    try {
      return await continueTaskable(taskable, state, responses, from.principal, TASK_AFTER_MS);
    } catch (error) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, ConnectError.from(error).rawMessage);
    }
  }
  if (typeof state === "string")
    return { response: await dispatchForMcp(deps, from, req, onEvent) };
  return startTaskable(
    taskable,
    req,
    from.principal,
    options,
    deferredCallerOf(from.ctx),
    TASK_AFTER_MS,
  );
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
