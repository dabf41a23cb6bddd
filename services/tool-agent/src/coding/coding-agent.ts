import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { toolAgentIdentity } from "@toolmesh/auth";
import { ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { providerToolName } from "@toolmesh/names";
import {
  CallErrorSchema,
  CallStatus,
  type DispatcherService,
  type RegistryService,
  SchemaFormat,
  type Task,
  type TaskLogEntry,
  TaskLogEntrySchema,
  TaskLogKind,
  ToolCallDialect,
} from "@toolmesh/proto";
import { deadline } from "../deadline.js";
import {
  type AssistantMessage,
  type ChatMessage,
  type ChatModel,
  type FunctionTool,
  ModelError,
} from "../model/chat-model.js";
import type { TaskResult } from "../tasks/router.js";
import type { TaskStore } from "../tasks/task-store.js";
import type { Builds } from "./builds.js";
import { type CodingBudgets, codingPrompt, taskBrief } from "./coding-prompt.js";
import { CODING_TOOL_NAMES, codingToolName } from "./coding-tools.js";
import type { Sandboxes } from "./sandbox.js";

export interface CodingAgentDeps {
  model: ChatModel;
  dispatcher: Client<typeof DispatcherService>;
  registry: Client<typeof RegistryService>;
  /** The CodingAgent's own credential: its calls are its own, granted the coding tools only. */
  token: () => string;
  tasks: TaskStore;
  builds: Builds;
  sandboxes: Sandboxes;
  budgets: CodingBudgets;
  log: Logger;
}

const LOG_TEXT_CHARS = 2000;
/** The most of one tool result the model is sent back, so a build's requests stay bounded. */
const RESULT_CHARS = 16_000;

/**
 * The CodingAgent: builds one task in its sandbox. It talks to its model and runs each reply's
 * tool calls through the Dispatcher (DispatchToolCalls, with its own credential and the task's
 * trace id), so every step is checked, recorded and audited like any agent's call and `toolmesh
 * trace` shows the whole build. It stops when the model answers without calling a tool, or when
 * a budget (steps, time, tokens) is spent; the task succeeds only if register_tool registered it.
 */
export class CodingAgent {
  constructor(private readonly deps: CodingAgentDeps) {}

  /** Builds `task`; never throws: a failure is a TaskResult with an error. */
  async run(task: Task, signal: AbortSignal): Promise<TaskResult> {
    const { deps } = this;
    const { budgets } = deps;
    const build = deps.builds.open(task);
    const limit = deadline(budgets.timeoutMs, signal);
    const abort = limit.signal;
    const started = Date.now();
    let steps = 0;
    let tokens = 0;
    const end = (code: string, message: string): TaskResult => ({
      steps,
      tokens,
      ...(build.registered
        ? { toolName: build.registered }
        : { error: create(CallErrorSchema, { code, message }) }),
    });
    try {
      const tools = await this.tools(abort);
      const messages: ChatMessage[] = [
        { role: "system", content: codingPrompt(budgets) },
        { role: "user", content: taskBrief(task) },
      ];
      for (;;) {
        let reply: AssistantMessage;
        try {
          const completion = await deps.model.complete(messages, tools, abort);
          reply = completion.message;
          tokens += completion.tokens;
        } catch (error) {
          if (limit.expired) return end("time_budget", this.overTime(started));
          if (signal.aborted)
            return end(
              "agent_stopped",
              "the tool agent stopped during the build; submit the task again",
            );
          if (error instanceof ModelError) return end("model_unavailable", error.message);
          throw error;
        }
        messages.push(reply);
        const calls = reply.tool_calls ?? [];
        await this.note(task, TaskLogKind.MODEL, modelLine(reply));
        if (tokens > budgets.maxTokens)
          return end(
            "token_budget",
            `the build used ${tokens} model tokens, over its budget of ${budgets.maxTokens} (TOOLMESH_CODING_MAX_TOKENS)`,
          );
        if (calls.length === 0) {
          return build.registered
            ? end("", "")
            : end(
                "no_tool_registered",
                `the CodingAgent stopped without registering a tool: ${clip(reply.content ?? "", 500)}`,
              );
        }
        if (steps + calls.length > budgets.maxSteps)
          return end(
            "step_budget",
            `the build would take more than ${budgets.maxSteps} tool calls (TOOLMESH_CODING_MAX_STEPS)`,
          );
        steps += calls.length;
        const results = await this.dispatch(task, reply, abort).catch((error: unknown) => {
          if (limit.expired) return undefined;
          throw error;
        });
        if (!results) return end("time_budget", this.overTime(started));
        messages.push(...results);
        await deps.tasks.update(task.id, (t) => {
          t.steps = steps;
          t.tokens = BigInt(tokens);
          return t;
        });
      }
    } catch (error) {
      if (limit.expired) return end("time_budget", this.overTime(started));
      deps.log.error({ err: error, task_id: task.id, trace_id: task.traceId }, "build failed");
      return end(
        "internal",
        `the build failed inside the tool agent: ${ConnectError.from(error).rawMessage}`,
      );
    } finally {
      limit.clear();
      deps.builds.close(task);
      await deps.sandboxes
        .destroy(task.id)
        .catch((error: unknown) =>
          deps.log.warn({ err: error, task_id: task.id }, "could not remove a task's sandbox"),
        );
    }
  }

  /** The coding tools' definitions as the model sees them: exactly their plain names. */
  private async tools(signal: AbortSignal): Promise<FunctionTool[]> {
    const names = CODING_TOOL_NAMES.map(codingToolName);
    const { tools } = await this.deps.registry.exportToolSchemas(
      { format: SchemaFormat.OPENAI, names },
      { headers: { authorization: `Bearer ${this.deps.token()}` }, timeoutMs: 10_000, signal },
    );
    return tools.map((t) => {
      const definition = t.definition as unknown as FunctionTool;
      return { ...definition, function: { ...definition.function, name: plainName(t.tool) } };
    });
  }

  /** Runs a reply's calls through the Dispatcher and logs each; resolves with the tool messages. */
  private async dispatch(
    task: Task,
    reply: AssistantMessage,
    signal: AbortSignal,
  ): Promise<ChatMessage[]> {
    const calls = reply.tool_calls ?? [];
    // The model calls tools by their plain names; the chain knows them as coding.<name>.
    const message = {
      role: "assistant",
      content: reply.content,
      tool_calls: calls.map((c) => ({
        ...c,
        function: { ...c.function, name: registryName(c.function.name) },
      })),
    } as unknown as JsonObject;
    const res = await this.deps.dispatcher.dispatchToolCalls(
      { message, dialect: ToolCallDialect.OPENAI_CHAT, traceId: task.traceId },
      { headers: { authorization: `Bearer ${this.deps.token()}` }, signal },
    );
    const entries: TaskLogEntry[] = res.results.map((result, i) =>
      create(TaskLogEntrySchema, {
        time: timestampNow(),
        kind: TaskLogKind.TOOL,
        tool: registryName(calls[i]?.function.name ?? ""),
        callId: result.callId,
        callStatus: result.status,
        text: clip(
          `${calls[i]?.function.name ?? "?"} ${CallStatus[result.status] ?? result.status}: ${
            result.status === CallStatus.SUCCESS
              ? JSON.stringify(result.output ?? {})
              : `${result.error?.code ?? ""} ${result.error?.message ?? ""}`
          }`,
          LOG_TEXT_CHARS,
        ),
      }),
    );
    await this.deps.tasks.append(task.id, entries);
    return res.messages.map((m) => {
      const message = m as unknown as ChatMessage;
      if (message.role !== "tool" || message.content.length <= RESULT_CHARS) return message;
      const cut = message.content.length - RESULT_CHARS;
      return {
        ...message,
        content: `${message.content.slice(0, RESULT_CHARS)}… (${cut} more characters)`,
      };
    });
  }

  private async note(task: Task, kind: TaskLogKind, text: string): Promise<void> {
    await this.deps.tasks.append(task.id, [
      create(TaskLogEntrySchema, { time: timestampNow(), kind, text: clip(text, LOG_TEXT_CHARS) }),
    ]);
  }

  private overTime(started: number): string {
    return `the build ran past its time budget of ${this.deps.budgets.timeoutMs} ms (TOOLMESH_CODING_TIMEOUT_MS) after ${Date.now() - started} ms`;
  }
}

/** The name the model uses for a coding tool. */
function plainName(registryName: string): string {
  const prefix = toolAgentIdentity.toolPrefix;
  const plain = registryName.startsWith(prefix) ? registryName.slice(prefix.length) : registryName;
  return (CODING_TOOL_NAMES as readonly string[]).includes(plain)
    ? plain
    : providerToolName(registryName);
}

/** The registry name of what the model called; an unknown name stays as it is (and is refused). */
function registryName(name: string): string {
  return (CODING_TOOL_NAMES as readonly string[]).includes(name) ? codingToolName(name) : name;
}

function modelLine(reply: AssistantMessage): string {
  const calls = reply.tool_calls ?? [];
  const said = reply.content ? clip(reply.content, 1000) : "";
  if (calls.length === 0) return said || "(no text)";
  return `${said ? `${said} — ` : ""}calls ${calls.map((c) => c.function.name).join(", ")}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
