import { readBody } from "@toolmesh/server";
import { deadline } from "../deadline.js";

/** A function tool as Chat Completions takes it. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One function call in an assistant message. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A Chat Completions message (the subset the agents write and read). */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export type AssistantMessage = Extract<ChatMessage, { role: "assistant" }>;

/** What one completion returned. */
export interface Completion {
  message: AssistantMessage;
  /** Tokens the model reports using (0 when it reports none). */
  tokens: number;
}

/** Where a model is and how to ask it; the API key never leaves this object but as a header. */
export interface ModelSettings {
  /** The base URL, such as `http://127.0.0.1:11434/v1`. */
  url: string;
  model: string;
  apiKey?: string | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
  /** max_tokens per reply; 0 leaves it to the model. */
  maxTokens: number;
}

/** Why a model request failed: each maps to one gRPC code at the edge. */
export type ModelFailure = "unreachable" | "timeout" | "http_error" | "malformed" | "cancelled";

/** A failed model request; the message names the model's URL, never its key. */
export class ModelError extends Error {
  override name = "ModelError";
  constructor(
    readonly failure: ModelFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * An OpenAI-compatible Chat Completions client with function tools — what OpenAI, vLLM, Ollama,
 * llama.cpp's server, LM Studio and LiteLLM serve. Every request is bounded in time (the
 * settings' timeout, or the caller's signal if sooner) and in size (the reply is read up to
 * maxResponseBytes), and every failure is a ModelError saying which of them happened.
 */
export class ChatModel {
  constructor(readonly settings: ModelSettings) {}

  /** The model's next message for `messages`, offering it `tools`. */
  async complete(
    messages: ChatMessage[],
    tools: FunctionTool[],
    signal?: AbortSignal,
  ): Promise<Completion> {
    const { settings } = this;
    const endpoint = `${settings.url.replace(/\/+$/, "")}/chat/completions`;
    const limit = deadline(settings.timeoutMs, signal);
    const body = JSON.stringify({
      model: settings.model,
      messages,
      ...(tools.length > 0 ? { tools, tool_choice: "auto" } : {}),
      ...(settings.maxTokens > 0 ? { max_tokens: settings.maxTokens } : {}),
    });
    let response: Response;
    let text: string | undefined;
    try {
      response = await fetch(endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
        },
        body,
        signal: limit.signal,
      });
      text = await readBody(response.body, settings.maxResponseBytes);
    } catch (error) {
      throw this.failed(error, limit.expired, signal);
    } finally {
      limit.clear();
    }
    if (text === undefined)
      throw new ModelError(
        "malformed",
        `the model at ${settings.url} answered more than ${settings.maxResponseBytes} bytes (TOOLMESH_MODEL_MAX_RESPONSE_BYTES)`,
      );
    if (!response.ok)
      throw new ModelError(
        "http_error",
        `the model at ${settings.url} answered HTTP ${response.status}: ${oneLine(this.scrub(text), 300)}`,
      );
    return parseCompletion(this.scrub(text), settings.url);
  }

  /** A model's text with the API key taken out, in case a server echoes what it was sent. */
  private scrub(text: string): string {
    const key = this.settings.apiKey;
    return key ? text.replaceAll(key, "[api key]") : text;
  }

  private failed(error: unknown, timedOut: boolean, signal: AbortSignal | undefined) {
    const { url, timeoutMs } = this.settings;
    if (timedOut)
      return new ModelError(
        "timeout",
        `the model at ${url} did not answer within ${timeoutMs} ms (TOOLMESH_MODEL_TIMEOUT_MS)`,
        { cause: error },
      );
    if (signal?.aborted)
      return new ModelError("cancelled", `the request to the model at ${url} was given up`, {
        cause: error,
      });
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return new ModelError(
      "unreachable",
      `the model at ${url} cannot be reached: ${cause?.code ?? cause?.message ?? String(error)}`,
      { cause: error },
    );
  }
}

/** Reads a Chat Completions reply; anything else is a `malformed` ModelError. */
export function parseCompletion(text: string, url: string): Completion {
  const malformed = (why: string) =>
    new ModelError(
      "malformed",
      `the model at ${url} answered something that is not a Chat Completions reply (${why}): ${oneLine(text, 200)}`,
    );
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw malformed("not JSON");
  }
  const choice = (body as { choices?: unknown })?.choices;
  const message = Array.isArray(choice)
    ? (choice[0] as { message?: unknown } | undefined)?.message
    : undefined;
  if (!message || typeof message !== "object") throw malformed("no choices[0].message");
  const { content, tool_calls: calls } = message as { content?: unknown; tool_calls?: unknown };
  if (content !== undefined && content !== null && typeof content !== "string")
    throw malformed("content is not a string");
  const toolCalls: ToolCall[] = [];
  if (calls !== undefined && calls !== null) {
    if (!Array.isArray(calls)) throw malformed("tool_calls is not a list");
    for (const [i, call] of calls.entries()) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } })?.function;
      if (!fn || typeof fn.name !== "string") throw malformed(`tool_calls[${i}] has no name`);
      const id = (call as { id?: unknown }).id;
      toolCalls.push({
        id: typeof id === "string" && id !== "" ? id : `call_${i}`,
        type: "function",
        function: {
          name: fn.name,
          // Arguments are the model's own text; a garbled one is the tool's error, not ours.
          arguments:
            typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {}),
        },
      });
    }
  }
  const usage = (body as { usage?: { total_tokens?: unknown } }).usage;
  return {
    message: {
      role: "assistant",
      content: typeof content === "string" ? content : null,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    },
    tokens: typeof usage?.total_tokens === "number" ? usage.total_tokens : 0,
  };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
