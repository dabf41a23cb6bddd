import type { JsonObject } from "@bufbuild/protobuf";
import { toolAgentIdentity } from "@toolmesh/auth";
import { defineTool, type ToolContext, type ToolDefinition, ToolError } from "@toolmesh/sdk";
import type { Builds } from "./builds.js";
import type { CommandResult } from "./container-exec.js";
import { type RegisterArgs, type RegisterDeps, registerBuiltTool } from "./register-tool.js";
import { SandboxError, type Sandboxes } from "./sandbox.js";

/** The CodingAgent's tools, exactly, by the names the model sees. */
export const CODING_TOOL_NAMES = [
  "create_docker_env",
  "run_in_docker",
  "rebuild_docker_ports",
  "destroy_docker_env",
  "create_uv_project",
  "run_in_uv",
  "uv_add_dependency",
  "write_file",
  "read_file",
  "register_tool",
] as const;

/** The registry name of a coding tool: `coding.<name>`. */
export function codingToolName(name: string): string {
  return `${toolAgentIdentity.toolPrefix}${name}`;
}

export interface CodingToolDeps extends RegisterDeps {
  builds: Builds;
  sandboxes: Sandboxes;
  /** The longest one sandbox command may run (a tool's timeout is this and a margin). */
  commandTimeoutMs: number;
}

const relativePath = { type: "string", minLength: 1, maxLength: 512 } as const;
const argv = { type: "array", items: { type: "string", maxLength: 4096 }, maxItems: 64 } as const;

/**
 * The ten tools the CodingAgent builds with, served by the tool agent (a grpc backend) and
 * registered as `coding.*`: every step of a build is a call through the Dispatcher's chain under
 * the task's trace id, checked, recorded and audited like any agent's call. Each finds its task
 * by that trace id; sandbox failures the model can fix are tool errors it reads.
 */
export function codingTools(deps: CodingToolDeps): ToolDefinition<never>[] {
  const { builds, sandboxes } = deps;
  const slow = deps.commandTimeoutMs + 30_000;
  const task = (ctx: ToolContext) => builds.of(ctx.traceId).task.id;
  const define = <A>(
    name: (typeof CODING_TOOL_NAMES)[number],
    description: string,
    inputSchema: JsonObject,
    handler: (args: A, ctx: ToolContext) => Promise<JsonObject>,
    timeoutMs = slow,
  ) =>
    defineTool<A>({
      name: codingToolName(name),
      description,
      category: "coding",
      inputSchema: { type: "object", additionalProperties: false, ...inputSchema },
      requiredScopes: [toolAgentIdentity.scope],
      // Every step changes the sandbox; in one reply they run one after another, in order.
      sideEffects: true,
      timeoutMs,
      handler: (args, ctx) => handler(args, ctx).catch(asToolError),
    }) as unknown as ToolDefinition<never>;

  return [
    define(
      "create_docker_env",
      "Create this task's sandbox: a container (no network, non-root) whose /workspace is the task's workspace. The other tools make it when there is none; calling this again keeps it.",
      { properties: {} },
      async (_args, ctx) => {
        const made = await sandboxes.create(task(ctx));
        return { ...made, workspace: "/workspace" };
      },
    ),
    define<{ command: string; timeout_ms?: number }>(
      "run_in_docker",
      "Run a shell command (busybox sh) in the sandbox, in /workspace. Returns exit_code, stdout, stderr, timed_out.",
      {
        properties: {
          command: { type: "string", minLength: 1, maxLength: 16_384 },
          timeout_ms: { type: "integer", minimum: 100, maximum: 3_600_000 },
        },
        required: ["command"],
      },
      async (args, ctx) =>
        commandResult(await sandboxes.run(task(ctx), args.command, args.timeout_ms)),
    ),
    define<{ ports: number[] }>(
      "rebuild_docker_ports",
      "Recreate the sandbox container (the workspace is kept, processes are not) declaring the ports the tool will listen on; TOOLMESH_TOOL_PORT is set to the first.",
      {
        properties: {
          ports: {
            type: "array",
            items: { type: "integer", minimum: 1, maximum: 65535 },
            minItems: 1,
            maxItems: 8,
          },
        },
        required: ["ports"],
      },
      async (args, ctx) => sandboxes.create(task(ctx), args.ports),
    ),
    define(
      "destroy_docker_env",
      "Remove the sandbox container; the workspace stays until the task ends.",
      { properties: {} },
      async (_args, ctx) => ({ destroyed: await sandboxes.removeContainer(task(ctx)) }),
    ),
    define<{ name: string; path?: string }>(
      "create_uv_project",
      "Create a uv (Python) application project in the workspace (uv init).",
      {
        properties: {
          name: { type: "string", pattern: "^[a-z][a-z0-9_-]{0,63}$" },
          path: relativePath,
        },
        required: ["name"],
      },
      async (args, ctx) =>
        commandResult(
          await sandboxes.runUv(task(ctx), [
            "init",
            "--app",
            "--no-workspace",
            "--vcs",
            "none",
            "--name",
            args.name,
            args.path ?? args.name,
          ]),
        ),
    ),
    define<{ project: string; command: string[]; timeout_ms?: number }>(
      "run_in_uv",
      "Run a command in a uv project of the workspace (uv run --project <project> <command…>), for instance its tests.",
      {
        properties: {
          project: relativePath,
          command: { ...argv, minItems: 1 },
          timeout_ms: { type: "integer", minimum: 100, maximum: 3_600_000 },
        },
        required: ["project", "command"],
      },
      async (args, ctx) =>
        commandResult(
          await sandboxes.runUv(
            task(ctx),
            ["run", "--project", args.project, ...args.command],
            args.timeout_ms,
          ),
        ),
    ),
    define<{ project: string; packages: string[] }>(
      "uv_add_dependency",
      "Add Python packages to a uv project (uv add). Needs the sandbox network (TOOLMESH_CODING_NETWORK).",
      {
        properties: {
          project: relativePath,
          packages: {
            type: "array",
            items: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._\\[\\],<>=!~ -]{0,199}$" },
            minItems: 1,
            maxItems: 32,
          },
        },
        required: ["project", "packages"],
      },
      async (args, ctx) =>
        commandResult(
          await sandboxes.runUv(task(ctx), ["add", "--project", args.project, ...args.packages]),
        ),
    ),
    define<{ path: string; content: string; executable?: boolean }>(
      "write_file",
      "Write a file of the workspace (a relative path), creating its folders.",
      {
        properties: {
          path: relativePath,
          content: { type: "string", maxLength: 1_000_000 },
          executable: { type: "boolean" },
        },
        required: ["path", "content"],
      },
      async (args, ctx) =>
        sandboxes.writeFile(task(ctx), args.path, args.content, args.executable === true),
      60_000,
    ),
    define<{ path: string }>(
      "read_file",
      "Read a file of the workspace (a relative path), up to 64 KiB.",
      { properties: { path: relativePath }, required: ["path"] },
      async (args, ctx) => sandboxes.readFile(task(ctx), args.path),
      60_000,
    ),
    define<RegisterArgs>(
      "register_tool",
      "Register the built tool, disabled until an operator enables it. docker: an image of the workspace (at /app) running `command`; uv: the uv project `project` run by `uv run <command…>` on the host. The tool listens on 127.0.0.1:$TOOLMESH_TOOL_PORT: GET /healthz answers 200 once it is ready, POST on http_path takes the arguments as JSON and answers a JSON object (or it serves toolmesh's grpc backend contract).",
      {
        properties: {
          name: { type: "string", pattern: "^[a-z][a-z0-9_-]*(\\.[a-z0-9_-]+)*$", maxLength: 64 },
          description: { type: "string", minLength: 1, maxLength: 4000 },
          input_schema: { type: "object" },
          output_schema: { type: "object" },
          runtime: { enum: ["docker", "uv"] },
          command: { ...argv, minItems: 1 },
          protocol: { enum: ["http", "grpc"] },
          http_path: { type: "string", pattern: "^/[A-Za-z0-9/_.-]{0,200}$" },
          project: relativePath,
          required_scopes: { type: "array", items: { type: "string", maxLength: 64 }, maxItems: 8 },
        },
        required: ["name", "description", "input_schema", "runtime", "command"],
      },
      async (args, ctx) => registerBuiltTool(deps, builds.of(ctx.traceId), args),
      10 * 60_000,
    ),
  ];
}

function commandResult(result: CommandResult): JsonObject {
  return {
    exit_code: result.exitCode,
    stdout: result.stdout,
    stderr: result.stderr,
    timed_out: result.timedOut,
  };
}

/** A sandbox failure as a tool error with its code; anything else as it is. */
function asToolError(error: unknown): never {
  if (error instanceof SandboxError) throw new ToolError(error.code, error.message);
  throw error;
}
