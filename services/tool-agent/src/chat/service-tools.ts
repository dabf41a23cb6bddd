import { create, type JsonObject, toJson } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import {
  BuildRuntime,
  type RegistryService,
  RuntimeKind,
  type Task,
  TaskSpecSchema,
  TaskStatus,
  ToolStatus,
} from "@toolmesh/proto";
import type { TaskDesk } from "../tasks/task-desk.js";
import type { AgentTool, Caller } from "./agent-tools.js";

/** What the ServiceAgent's tools read and write. */
export interface ServiceToolDeps {
  /** The Registry, always asked with the caller's own credential. */
  registry: Client<typeof RegistryService>;
  tasks: TaskDesk;
}

const RPC_TIMEOUT_MS = 10_000;
/** The most tools list_tools returns; past it the model is told to narrow its query. */
const MAX_LISTED = 100;

const asCaller = (caller: Caller, signal: AbortSignal) => ({
  headers: { authorization: caller.authorization },
  timeoutMs: RPC_TIMEOUT_MS,
  signal,
});

const enumWord = (names: Record<number, string>, value: number) =>
  (names[value] ?? "UNSPECIFIED").toLowerCase();

/**
 * The ServiceAgent's tools, exactly: list_tools, get_tool_details, list_groups,
 * list_backend_runtimes, check_task_status (reads) and submit_task (the one write). Every read of
 * the Registry carries the caller's own credential, so the caller's grants decide what the
 * ServiceAgent lists — it can never tell a caller about a tool the caller may not use.
 */
export function serviceTools(deps: ServiceToolDeps): AgentTool[] {
  const { registry } = deps;
  return [
    {
      name: "list_tools",
      description:
        "List the tools the person you talk to may call: name, one-line description, category, status and runtime. Filter by a keyword (in name or description), a category or a group.",
      parameters: {
        type: "object",
        properties: {
          keyword: { type: "string", maxLength: 200 },
          category: { type: "string", maxLength: 100 },
          group: { type: "string", maxLength: 64 },
        },
        additionalProperties: false,
      },
      async run(args, caller, signal) {
        const tools: JsonObject[] = [];
        let pageToken = "";
        do {
          const page = await registry.listTools(
            {
              keyword: String(args.keyword ?? ""),
              category: String(args.category ?? ""),
              group: String(args.group ?? ""),
              pageSize: 500,
              pageToken,
            },
            asCaller(caller, signal),
          );
          for (const tool of page.tools) {
            const spec = tool.spec;
            if (!spec) continue;
            tools.push({
              name: spec.name,
              description: (spec.description.split("\n")[0] ?? "").slice(0, 200),
              category: spec.category,
              status: enumWord(ToolStatus, spec.status),
              runtime: spec.runtime?.kind.case ?? "none",
              groups: tool.groups,
            });
          }
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && tools.length <= MAX_LISTED);
        return {
          tools: tools.slice(0, MAX_LISTED),
          ...(tools.length > MAX_LISTED
            ? { truncated: `more than ${MAX_LISTED} tools; narrow with a keyword or group` }
            : {}),
        };
      },
    },
    {
      name: "get_tool_details",
      description:
        "Everything needed to call one tool: its description, input and output JSON Schemas, required scopes, side effects, groups, and how to call it through toolmesh.",
      parameters: {
        type: "object",
        properties: { name: { type: "string", minLength: 1, maxLength: 64 } },
        required: ["name"],
        additionalProperties: false,
      },
      async run(args, caller, signal) {
        const { tool } = await registry.getTool(
          { name: String(args.name) },
          asCaller(caller, signal),
        );
        const spec = tool?.spec;
        if (!tool || !spec) return { error: "no such tool" };
        return {
          name: spec.name,
          version: spec.version,
          description: spec.description,
          category: spec.category,
          status: enumWord(ToolStatus, spec.status),
          input_schema: spec.inputSchema ?? {},
          output_schema: spec.outputSchema ?? {},
          required_scopes: spec.requiredScopes,
          side_effects: spec.sideEffects,
          idempotent: spec.idempotent,
          requires_approval: spec.requiresApproval,
          timeout_ms: spec.timeoutMs,
          runtime: spec.runtime?.kind.case ?? "none",
          groups: tool.groups,
          how_to_call: {
            grpc: `DispatcherService.Dispatch {"tool": "${spec.name}", "arguments": {…}}`,
            http: `POST /run_tool {"tool_id": "${spec.name}", "params": {…}} on the Dispatcher's port`,
            python: `client.call("${spec.name}", {…})`,
          },
        };
      },
    },
    {
      name: "list_groups",
      description:
        "List tool groups: tools that are used together, in their usage order, with an example. Only the tools the person may call are shown.",
      parameters: { type: "object", properties: {}, additionalProperties: false },
      async run(_args, caller, signal) {
        const groups: JsonObject[] = [];
        let pageToken = "";
        do {
          const page = await registry.listGroups(
            { pageSize: 500, pageToken },
            asCaller(caller, signal),
          );
          for (const g of page.groups)
            groups.push({
              name: g.name,
              description: g.description,
              tools: g.tools,
              example: g.example,
            });
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && groups.length < 500);
        return { groups };
      },
    },
    {
      name: "list_backend_runtimes",
      description:
        "How the tools the person may call are run: per runtime kind (grpc, local, remote, docker, mcp), how many tools, how many active, deprecated and disabled, and their names.",
      parameters: { type: "object", properties: {}, additionalProperties: false },
      async run(_args, caller, signal) {
        const { runtimes } = await registry.listRuntimes({}, asCaller(caller, signal));
        return {
          runtimes: runtimes
            .filter((r) => r.toolCount > 0)
            .map((r) => ({
              kind: enumWord(RuntimeKind, r.kind),
              tool_count: r.toolCount,
              active: r.activeCount,
              deprecated: r.deprecatedCount,
              disabled: r.disabledCount,
              tools: r.tools.slice(0, 50),
            })),
        };
      },
    },
    {
      name: "check_task_status",
      description:
        "The status of a tool-building task the person submitted (pending, running, succeeded with the registered tool's name, or failed with why), with the last lines of its build log. Without task_id: their latest tasks.",
      parameters: {
        type: "object",
        properties: { task_id: { type: "string", pattern: "^[0-9a-f]{32}$" } },
        additionalProperties: false,
      },
      async run(args, caller) {
        if (typeof args.task_id === "string") {
          const task = await deps.tasks.get(caller.principal, args.task_id);
          return {
            ...taskSummary(task),
            log: task.log.slice(-8).map((e) => e.text),
          };
        }
        return { tasks: deps.tasks.visible(caller.principal).slice(0, 10).map(taskSummary) };
      },
    },
    {
      name: "submit_task",
      description:
        "Hand a spec for a new tool to the CodingAgent, which writes, tests and registers it (disabled, until an operator enables it). Use when no existing tool does what is needed.",
      parameters: {
        type: "object",
        properties: {
          description: { type: "string", minLength: 1, maxLength: 8000 },
          tool_name: { type: "string", pattern: "^[a-z][a-z0-9_-]*(\\.[a-z0-9_-]+)*$" },
          inputs: { type: "string", maxLength: 4000 },
          outputs: { type: "string", maxLength: 4000 },
          acceptance_checks: {
            type: "array",
            items: { type: "string", maxLength: 1000 },
            maxItems: 20,
          },
          preferred_runtime: { enum: ["docker", "uv", "any"] },
        },
        required: ["description"],
        additionalProperties: false,
      },
      async run(args, caller) {
        const runtime =
          args.preferred_runtime === "docker"
            ? BuildRuntime.DOCKER
            : args.preferred_runtime === "uv"
              ? BuildRuntime.UV
              : BuildRuntime.UNSPECIFIED;
        const spec = create(TaskSpecSchema, {
          description: String(args.description),
          toolName: String(args.tool_name ?? ""),
          inputs: String(args.inputs ?? ""),
          outputs: String(args.outputs ?? ""),
          acceptanceChecks: (args.acceptance_checks as string[] | undefined) ?? [],
          preferredRuntime: runtime,
        });
        const { task, queuePosition } = await deps.tasks.submit(
          caller.principal,
          spec,
          caller.chatId,
        );
        caller.filed(task.id);
        return { task_id: task.id, status: "pending", queue_position: queuePosition };
      },
    },
  ];
}

function taskSummary(task: Task): JsonObject {
  return {
    task_id: task.id,
    status: enumWord(TaskStatus, task.status),
    description: (task.spec?.description ?? "").slice(0, 200),
    ...(task.toolName ? { tool_name: task.toolName } : {}),
    ...(task.error ? { error: `${task.error.code}: ${task.error.message}` } : {}),
    trace_id: task.traceId,
    spec: task.spec ? (toJson(TaskSpecSchema, task.spec) as JsonObject) : {},
  };
}
