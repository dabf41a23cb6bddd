import {
  AgentService,
  type GetSystemStatusResponse,
  GetSystemStatusResponseSchema,
  TaskLogKind,
  TaskSchema,
  TaskStatus,
} from "@toolmesh/proto";
import { enumName, flag, type Group, jsonOf, when } from "../command.js";
import { type CliContext, UsageError } from "../context.js";
import { repair } from "./repair.js";

/** The tool agent's RPCs, at the Dispatcher's address (which forwards them). */
const agent = (ctx: CliContext) => ctx.client("dispatcher", AgentService);

const word = (status: TaskStatus) => enumName(TaskStatus, status);

/** `toolmesh tasks …`: the task specs the CodingAgent builds. */
export const tasks: Group = {
  summary: "the tool agent's task specs: list them, show one with its build log, repair a tool",
  sub: {
    repair,
    ls: {
      summary: "list tasks, newest first (yours; an admin's: everyone's)",
      usage: "tasks ls [--status pending|running|succeeded|failed]",
      options: { status: { type: "string" } },
      async run(ctx, _args, flags) {
        const wanted = flag(flags, "status");
        const status = wanted === undefined ? 0 : TaskStatus[wanted.toUpperCase() as "PENDING"];
        if (status === undefined)
          throw new UsageError(
            `unknown status "${wanted}"; use one of pending, running, succeeded, failed`,
          );
        const res = await agent(ctx).listTasks({ status, pageSize: 500 }, ctx.auth());
        ctx.out.result(
          res.tasks.map((t) => jsonOf(TaskSchema, t)),
          () =>
            ctx.out.table(
              ["ID", "STATUS", "OWNER", "CREATED", "TOOL", "DESCRIPTION"],
              res.tasks.map((t) => [
                t.id,
                word(t.status),
                t.owner?.agentId ?? "",
                when(t.createdAt),
                t.toolName || t.error?.code || "-",
                (t.spec?.description ?? "").split("\n")[0]?.slice(0, 50) ?? "",
              ]),
            ),
        );
        return 0;
      },
    },
    get: {
      summary: "show a task: its spec, status, trace id and build log",
      usage: "tasks get <id>",
      args: [1, 1],
      async run(ctx, [id]) {
        const { task } = await agent(ctx).getTask({ id }, ctx.auth());
        if (!task) return 1;
        ctx.out.result(jsonOf(TaskSchema, task), () => {
          ctx.out.line(`task ${task.id}: ${word(task.status)}`);
          ctx.out.line(`  ${task.spec?.description ?? ""}`);
          if (task.toolName)
            ctx.out.line(
              `  tool ${task.toolName} (enable it: toolmesh tools enable ${task.toolName})`,
            );
          if (task.error) ctx.out.line(`  ${task.error.code}: ${task.error.message}`);
          ctx.out.line(
            `  trace ${task.traceId} (toolmesh trace ${task.traceId}); ${task.steps} steps, ${task.tokens} tokens`,
          );
          ctx.out.line();
          ctx.out.table(
            ["TIME", "WHO", "CALL", "TEXT"],
            task.log.map((e) => [
              when(e.time),
              enumName(TaskLogKind, e.kind),
              e.callId || "-",
              e.text.replaceAll("\n", " ").slice(0, 160),
            ]),
          );
        });
        return 0;
      },
    },
  },
};

/** The tool agent's status for `toolmesh status`, or why it is not known. */
export async function systemStatus(
  ctx: CliContext,
): Promise<{ status?: GetSystemStatusResponse; error?: string }> {
  try {
    return { status: await agent(ctx).getSystemStatus({}, ctx.auth({ timeoutMs: 5000 })) };
  } catch (error) {
    return { error: `tool agent status unknown: ${(error as Error).message}` };
  }
}

/** Prints GetSystemStatus: tools, the CodingAgent's queue, the windows, the IM and the model. */
export function printSystemStatus(ctx: CliContext, status: GetSystemStatusResponse): void {
  const { out } = ctx;
  const tools = status.tools;
  out.line(
    tools
      ? `tools: ${tools.total} (${tools.active} active, ${tools.deprecated} deprecated, ${tools.disabled} disabled)`
      : "tools: unknown (the Registry did not answer)",
  );
  const coding = status.codingAgent;
  out.line(
    `CodingAgent: ${coding?.runningCount ?? 0} running of ${coding?.concurrency ?? 0}${
      coding?.runningTaskIds.length ? ` (${coding.runningTaskIds.join(", ")})` : ""
    }, ${coding?.queuedCount ?? 0} queued`,
  );
  const model = status.model;
  out.line(
    model?.configured
      ? `model: ${model.model} at ${model.url}${model.codingUrl ? `; CodingAgent: ${model.codingModel} at ${model.codingUrl}` : ""}`
      : "model: none (set TOOLMESH_MODEL_URL on the tool agent)",
  );
  const im = status.im;
  out.line(
    !im?.configured
      ? "IM: off (TOOLMESH_IM_URL unset)"
      : `IM: ${im.connected ? out.paint("green", "connected") : out.paint("red", "disconnected")} to ${im.url} as ${im.contact}${
          im.reconnects ? `, ${im.reconnects} reconnects` : ""
        }${!im.connected && im.lastError ? ` (${im.lastError})` : ""}`,
  );
  if (coding?.recentTasks.length) {
    out.line();
    out.table(
      ["TASK", "STATUS", "OWNER", "TOOL", "DESCRIPTION"],
      coding.recentTasks.map((t) => [
        t.id,
        word(t.status),
        t.owner?.agentId ?? "",
        t.toolName || t.error?.code || "-",
        (t.spec?.description ?? "").split("\n")[0]?.slice(0, 50) ?? "",
      ]),
    );
  }
  if (status.windows.length) {
    out.line();
    out.table(
      ["WINDOW", "OWNER", "IM", "MESSAGES", "UPDATED"],
      status.windows.map((w) => [
        w.chatId,
        `${w.owner?.agentId ?? ""}${w.owner?.userId ? ` for ${w.owner.userId}` : ""}`,
        w.imWindow ? "yes" : "no",
        String(w.messageCount),
        when(w.updatedAt),
      ]),
    );
  }
}

/** The status in its JSON form, for --json. */
export function systemStatusJson(status: GetSystemStatusResponse) {
  return jsonOf(GetSystemStatusResponseSchema, status);
}
