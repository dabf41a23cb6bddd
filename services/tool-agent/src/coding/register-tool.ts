import { cp, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { toolAgentIdentity } from "@toolmesh/auth";
import { NOBODY } from "@toolmesh/docker";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  LocalProtocol,
  type RegistryService,
  type RuntimeSchema,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { ToolError } from "@toolmesh/sdk";
import type Docker from "dockerode";
import type { Build } from "./builds.js";
import { buildImage, ImageBuildError } from "./image-build.js";
import { type Sandboxes, workspacePath } from "./sandbox.js";

/** What register_tool is asked (the Dispatcher checked it against the tool's input schema). */
export interface RegisterArgs {
  name: string;
  description: string;
  input_schema: JsonObject;
  output_schema?: JsonObject;
  runtime: "docker" | "uv";
  /** The command that serves the tool (argv): in the image, or after `uv run` in the project. */
  command: string[];
  protocol?: "http" | "grpc";
  http_path?: string;
  /** For uv: the project's folder in the workspace. */
  project?: string;
  required_scopes?: string[];
}

export interface RegisterDeps {
  docker: Docker;
  sandboxes: Sandboxes;
  registry: Client<typeof RegistryService>;
  /** The tool agent's own credential (role tool-agent). */
  token: () => string;
  /** Where the projects of registered uv tools are kept on the host. */
  toolsRoot: string;
  /** The uv binary, for the local runtime of uv tools. */
  uv: string | undefined;
}

/** Folders of a workspace that stay behind: caches and environments the host rebuilds. */
const LEFT_BEHIND = /(^|\/)(\.venv|\.uv-cache|__pycache__)(\/|$)/;

/**
 * register_tool: packages the workspace as the tool's backend — an image built FROM the sandbox
 * image (the workspace at /app, run as nobody), or the uv project copied out of the workspace and
 * run by `uv run` as a local tool — and registers it in the Registry with status DISABLED, with
 * the tool agent's own credential: nothing a model wrote runs for agents until an operator has
 * enabled it. The task's container is removed first, so nothing in it changes the workspace
 * while it is copied.
 */
export async function registerBuiltTool(
  deps: RegisterDeps,
  build: Build,
  args: RegisterArgs,
): Promise<JsonObject> {
  const { task } = build;
  const wanted = task.spec?.toolName ?? "";
  if (wanted !== "" && args.name !== wanted)
    throw new ToolError(
      "wrong_name",
      `the task asks for a tool named "${wanted}"; register that name`,
    );
  if (args.name.startsWith(toolAgentIdentity.toolPrefix))
    throw new ToolError(
      "wrong_name",
      `names starting with "${toolAgentIdentity.toolPrefix}" are the tool agent's own; choose another`,
    );
  if (build.registered)
    throw new ToolError("already_registered", `this task already registered "${build.registered}"`);
  await deps.sandboxes.removeContainer(task.id);
  const workspace = await deps.sandboxes.workspace(task.id);
  const protocol = args.protocol === "grpc" ? LocalProtocol.GRPC : LocalProtocol.HTTP;
  const httpPath = args.http_path ?? "";
  const suffix = task.id.slice(0, 12);
  let runtime: MessageInitShape<typeof RuntimeSchema>;
  let where: JsonObject;
  if (args.runtime === "docker") {
    const image = `toolmesh-built/${args.name}:${suffix}`;
    const context = path.join(path.dirname(workspace), "build");
    await rm(context, { recursive: true, force: true });
    await mkdir(context, { recursive: true });
    try {
      await copyProject(workspace, path.join(context, "app"));
      await writeFile(
        path.join(context, "Dockerfile"),
        [
          `FROM ${await deps.sandboxes.sandboxImage()}`,
          "COPY app/ /app/",
          "WORKDIR /app",
          `USER ${NOBODY}`,
          `CMD ${JSON.stringify(args.command)}`,
          "",
        ].join("\n"),
      );
      await buildImage(deps.docker, context, image);
    } catch (error) {
      if (error instanceof ImageBuildError) throw new ToolError("build_failed", error.message);
      throw error;
    } finally {
      await rm(context, { recursive: true, force: true });
    }
    runtime = { kind: { case: "docker", value: { image, protocol, httpPath } } };
    where = { image };
  } else {
    if (!deps.uv)
      throw new ToolError(
        "uv_disabled",
        "uv is turned off (TOOLMESH_CODING_UV_ENABLED); build a docker tool",
      );
    const project =
      args.project && args.project !== "."
        ? workspacePath(args.project).slice("/workspace/".length)
        : "";
    const dir = path.join(deps.toolsRoot, `${args.name}-${suffix}`);
    await rm(dir, { recursive: true, force: true });
    await copyProject(path.join(workspace, project), dir);
    runtime = {
      kind: {
        case: "local",
        value: {
          command: deps.uv,
          args: ["run", "--project", dir, ...args.command],
          workingDir: dir,
          env: { UV_PYTHON_DOWNLOADS: "never", UV_NO_PROGRESS: "1" },
          protocol,
          httpPath,
        },
      },
    };
    where = { project: dir };
  }
  const spec = create(ToolSpecSchema, {
    name: args.name,
    description: args.description,
    category: "built",
    inputSchema: args.input_schema,
    ...(args.output_schema ? { outputSchema: args.output_schema } : {}),
    requiredScopes: args.required_scopes ?? [],
    status: ToolStatus.DISABLED,
    runtime,
    labels: { "toolmesh.task": task.id, "toolmesh.trace": task.traceId },
  });
  try {
    await deps.registry.registerTool(
      { tool: spec },
      { headers: { authorization: `Bearer ${deps.token()}` }, timeoutMs: 15_000 },
    );
  } catch (error) {
    const e = ConnectError.from(error);
    if (e.code === Code.AlreadyExists)
      throw new ToolError("name_taken", `a tool named "${args.name}" exists; choose another name`);
    if (e.code === Code.InvalidArgument) throw new ToolError("invalid_spec", e.rawMessage);
    throw new ToolError("registry_unavailable", `the Registry refused: ${e.rawMessage}`);
  }
  build.registered = args.name;
  return {
    tool_name: args.name,
    status: "disabled",
    runtime: args.runtime,
    ...where,
    note: "registered disabled: an operator enables it (toolmesh tools enable); the docker env was removed",
  };
}

/** Copies a project folder, links as links (never followed), caches and environments left. */
async function copyProject(from: string, to: string): Promise<void> {
  await cp(from, to, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) => !LEFT_BEHIND.test(path.relative(from, source)),
  });
}
