import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { invalidField } from "@toolmesh/errors";
import { CallStatus, type DispatchResponse, ToolCallDialect } from "@toolmesh/proto";
import { resultText } from "./result-text.js";

/** One tool call read from a model's reply. */
export interface ModelToolCall {
  /** The model's id of the call, echoed in its result. */
  id: string;
  /** The name the model used: a registry name or an exported one (`data__query`). */
  name: string;
  /** Parsed arguments, or why they could not be read. */
  args: { ok: true; value: JsonObject } | { ok: false; problem: string };
}

/** What each dialect reads and writes. */
interface Dialect {
  /** The tool calls of a reply; INVALID_ARGUMENT when the reply is not of this dialect. */
  calls(message: JsonObject): ModelToolCall[];
  /** The messages to append for the results, in call order. */
  messages(calls: ModelToolCall[], results: DispatchResponse[]): JsonObject[];
}

/** The dialect a reply is written in, recognised from its shape. */
export function recognise(message: JsonObject): ToolCallDialect {
  if (Array.isArray(message.tool_calls) || Array.isArray(message.choices))
    return ToolCallDialect.OPENAI_CHAT;
  if (Array.isArray(message.output)) return ToolCallDialect.OPENAI_RESPONSES;
  if (Array.isArray(message.content)) return ToolCallDialect.ANTHROPIC;
  throw invalidField(
    "message",
    "is not a model reply with tool calls: expected an OpenAI Chat Completions message (tool_calls) or completion (choices), an OpenAI Responses response (output) or an Anthropic message (content)",
  );
}

/** The reader and writer of a dialect. */
export function dialectOf(dialect: ToolCallDialect): Dialect {
  switch (dialect) {
    case ToolCallDialect.OPENAI_CHAT:
      return openAiChat;
    case ToolCallDialect.OPENAI_RESPONSES:
      return openAiResponses;
    case ToolCallDialect.ANTHROPIC:
      return anthropic;
    default:
      throw invalidField("dialect", `${dialect} is not a ToolCallDialect`);
  }
}

const openAiChat: Dialect = {
  calls(message) {
    let assistant = message;
    if (Array.isArray(message.choices)) {
      const first = asObject(message.choices[0]);
      assistant = asObject(first?.message) ?? {};
    }
    if (!Array.isArray(assistant.tool_calls))
      throw invalidField(
        "message.tool_calls",
        "is missing: the assistant message has no tool calls",
      );
    return assistant.tool_calls.map((item, i) => {
      const call = asObject(item);
      const fn = asObject(call?.function);
      if (!call || !fn || typeof fn.name !== "string")
        throw invalidField(`message.tool_calls[${i}]`, "needs function.name");
      return {
        id: stringOf(call.id),
        name: fn.name,
        args: parseArguments(fn.arguments),
      };
    });
  },
  messages(calls, results) {
    return calls.map((call, i) => ({
      role: "tool",
      tool_call_id: call.id,
      content: resultText(results[i]),
    }));
  },
};

const openAiResponses: Dialect = {
  calls(message) {
    const output = message.output as JsonValue[];
    const calls: ModelToolCall[] = [];
    output.forEach((item, i) => {
      const entry = asObject(item);
      if (entry?.type !== "function_call") return;
      if (typeof entry.name !== "string")
        throw invalidField(`message.output[${i}]`, "is a function_call without a name");
      calls.push({
        id: stringOf(entry.call_id),
        name: entry.name,
        args: parseArguments(entry.arguments),
      });
    });
    return calls;
  },
  messages(calls, results) {
    return calls.map((call, i) => ({
      type: "function_call_output",
      call_id: call.id,
      output: resultText(results[i]),
    }));
  },
};

const anthropic: Dialect = {
  calls(message) {
    const content = message.content as JsonValue[];
    const calls: ModelToolCall[] = [];
    content.forEach((item, i) => {
      const block = asObject(item);
      if (block?.type !== "tool_use") return;
      if (typeof block.name !== "string")
        throw invalidField(`message.content[${i}]`, "is a tool_use block without a name");
      const input = block.input;
      calls.push({
        id: stringOf(block.id),
        name: block.name,
        args:
          typeof input === "string"
            ? parseArguments(input)
            : asObject(input)
              ? { ok: true, value: input as JsonObject }
              : { ok: false, problem: "input must be a JSON object" },
      });
    });
    return calls;
  },
  messages(calls, results) {
    if (calls.length === 0) return [];
    return [
      {
        role: "user",
        content: calls.map((call, i) => {
          const result = results[i];
          return {
            type: "tool_result",
            tool_use_id: call.id,
            content: resultText(result),
            ...(isError(result) ? { is_error: true } : {}),
          };
        }),
      },
    ];
  },
};

/** Arguments as models send them: a JSON text of an object (OpenAI), sometimes empty. */
function parseArguments(raw: JsonValue | undefined): ModelToolCall["args"] {
  if (raw === undefined || raw === null || raw === "") return { ok: true, value: {} };
  if (typeof raw === "object" && !Array.isArray(raw)) return { ok: true, value: raw };
  if (typeof raw !== "string")
    return { ok: false, problem: "must be a JSON object or its JSON text" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    return {
      ok: false,
      problem: `are not valid JSON (${(error as Error).message}): ${JSON.stringify(raw.slice(0, 120))}`,
    };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    return { ok: false, problem: "must be a JSON object" };
  return { ok: true, value: parsed as JsonObject };
}

/** True for a result the model should read as an error. */
export function isError(result: DispatchResponse | undefined): boolean {
  return result?.status !== CallStatus.SUCCESS && result?.status !== CallStatus.PENDING;
}

function asObject(value: JsonValue | undefined): JsonObject | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

function stringOf(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}
