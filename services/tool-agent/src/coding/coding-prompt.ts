import { BuildRuntime, type Task } from "@toolmesh/proto";

/** A task's budgets. */
export interface CodingBudgets {
  /** Tool calls. */
  maxSteps: number;
  timeoutMs: number;
  /** Model tokens, as the model reports them. */
  maxTokens: number;
}

/** What the CodingAgent is told before each build. */
export function codingPrompt(budgets: CodingBudgets): string {
  return [
    "You are the CodingAgent of toolmesh. You build one tool from a task spec, test it, and register it.",
    "Work only through your tools. Your sandbox is a container without network whose /workspace is yours; it has busybox (sh, httpd, wget, sed, awk …). uv projects run Python in a sandbox of their own.",
    "A tool is a server: it listens on 127.0.0.1:$TOOLMESH_TOOL_PORT, answers GET /healthz with 200 once ready, and answers POST <http_path> with a JSON object, given the arguments as a JSON object. busybox httpd with a CGI script works: httpd -f -p 127.0.0.1:$TOOLMESH_TOOL_PORT -h /app/www (the workspace is /app in the image), a file www/healthz, and http_path /cgi-bin/<name>.",
    "Steps: create_docker_env, write the files (write_file), test them in the sandbox (run_in_docker, run_in_uv) until every acceptance check passes, then register_tool with a JSON Schema of the inputs. The tool is registered disabled; an operator enables it.",
    `Budgets: at most ${budgets.maxSteps} tool calls, ${Math.round(budgets.timeoutMs / 1000)} s and ${budgets.maxTokens} tokens. When the tool is registered, or it cannot be built, say so in one sentence without calling a tool.`,
  ].join("\n");
}

/** The task spec as the CodingAgent reads it. */
export function taskBrief(task: Task): string {
  const spec = task.spec;
  const runtime =
    spec?.preferredRuntime === BuildRuntime.DOCKER
      ? "docker"
      : spec?.preferredRuntime === BuildRuntime.UV
        ? "uv"
        : "your choice (docker or uv)";
  return [
    `Task ${task.id}: build this tool.`,
    `What it must do: ${spec?.description ?? ""}`,
    spec?.toolName ? `Register it as: ${spec.toolName}` : "Choose a dotted lowercase name for it.",
    spec?.inputs ? `Inputs: ${spec.inputs}` : "",
    spec?.outputs ? `Outputs: ${spec.outputs}` : "",
    spec?.acceptanceChecks.length
      ? `Acceptance checks:\n${spec.acceptanceChecks.map((c) => `- ${c}`).join("\n")}`
      : "",
    `Runtime: ${runtime}`,
  ]
    .filter((line) => line !== "")
    .join("\n");
}
