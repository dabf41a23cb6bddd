import { createHmac, randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServerContext } from "@modelcontextprotocol/server";

// What the conformance fixture's tools are made of: their shape, the results and questions they
// answer with (2026-07-28 input-required results), and the request state they sign.

export const IMAGE =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
export const AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
export const CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
export const LOG_LEVEL = "io.modelcontextprotocol/logLevel";
export const STATE_KEY = randomBytes(32);

/** One fixture tool: its listing and what a call of it answers. */
export interface FixtureTool {
  name: string;
  description: string;
  inputSchema?: JsonObject;
  taskSupport?: "optional" | "required";
  run(args: JsonObject, ctx: ServerContext): Promise<JsonObject> | JsonObject;
}

export const text = (value: string): JsonObject => ({ content: [{ type: "text", text: value }] });
export const ask = (inputRequests: JsonObject, requestState?: string): JsonObject => ({
  resultType: "input_required",
  inputRequests,
  ...(requestState ? { requestState } : {}),
});
export const elicit = (message: string, properties: JsonObject, required: string[] = []) => ({
  method: "elicitation/create",
  params: { message, requestedSchema: { type: "object", properties, required } },
});
export const sample = (prompt: string, maxTokens: number) => ({
  method: "sampling/createMessage",
  params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens },
});
export const roots = { method: "roots/list", params: {} };
export const answers = (ctx: ServerContext) =>
  (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
export const field = (answer: JsonObject | undefined, name: string) => {
  const value = (answer?.content as JsonObject | undefined)?.[name];
  return typeof value === "string" ? value : "unknown";
};
export const stateOf = (ctx: ServerContext): JsonObject | undefined => {
  const state = ctx.mcpReq.requestState<unknown>();
  return typeof state === "string" ? (JSON.parse(state) as JsonObject) : undefined;
};
export const signed = (payload: JsonObject) => {
  const data = JSON.stringify(payload);
  return JSON.stringify({ data, mac: createHmac("sha256", STATE_KEY).update(data).digest("hex") });
};
export const verified = (raw: string): JsonObject | undefined => {
  try {
    const { data, mac } = JSON.parse(raw) as { data: string; mac: string };
    return createHmac("sha256", STATE_KEY).update(data).digest("hex") === mac
      ? (JSON.parse(data) as JsonObject)
      : undefined;
  } catch {
    return undefined;
  }
};
export const envelope = (ctx: ServerContext) => (ctx.mcpReq.envelope ?? {}) as JsonObject;
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Error("cancelled"));
      },
      { once: true },
    );
  });
/** Log messages go to a client whose request asked for them (a level in its envelope). */
export const log = (ctx: ServerContext, data: string) =>
  envelope(ctx)[LOG_LEVEL]
    ? ctx.mcpReq.notify({ method: "notifications/message", params: { level: "info", data } })
    : Promise.resolve();
