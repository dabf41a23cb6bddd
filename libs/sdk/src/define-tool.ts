import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { Principal } from "@toolmesh/proto";
import type { Deferred } from "./deferred.js";

/** What a handler gets besides its arguments. */
export interface ToolContext {
  /** W3C trace id of the call chain. */
  traceId: string;
  callId: string;
  /** Who called (agent, user, roles); never a credential. */
  principal: Principal;
  /** 1 for the first attempt. */
  attempt: number;
  /** Milliseconds the Dispatcher still waits for this call. */
  deadlineMs: number;
  /** Aborted when the Dispatcher gives up (timeout, cancel) or the server stops. */
  signal: AbortSignal;
  /**
   * Emits a trace event the Dispatcher publishes under the call's trace id. kind is a
   * TraceEventKind name such as `DATA_QUERY`, or any upper-case name for a custom event.
   */
  trace(kind: string, payload?: JsonObject): void;
  /**
   * Finishes the call later: return `ctx.defer(work)` and the call is PENDING at once; when
   * `work` resolves (or throws) the outcome is reported with the tool's own credential
   * (serveTools' `reports`). For jobs that outlive a request.
   */
  defer(work: () => Promise<JsonObject>): Deferred;
  /**
   * Adds what this call cost the tool itself (an LLM's tokens, a paid API), in millionths of the
   * currency of its price: the Dispatcher adds it to the call's cost. Ignored for a tool without
   * a price.
   */
  reportCost(micros: number | bigint): void;
}

/** A tool as the SDK serves and registers it. */
export interface ToolDefinition<Args = JsonObject> {
  /** Registry name: dotted lowercase, such as `data.query`. */
  name: string;
  /** What the tool does, written for a language model choosing a tool. */
  description: string;
  category?: string;
  version?: string;
  /** JSON Schema of the arguments (an object schema); the Dispatcher validates against it. */
  inputSchema: JsonObject;
  /** JSON Schema of the output; the Dispatcher checks output against it. */
  outputSchema?: JsonObject;
  requiredScopes?: string[];
  /** Safe to run twice with the same arguments: the Dispatcher may retry transient failures. */
  idempotent?: boolean;
  /** Changes the world; such tools run one at a time in a batch. */
  sideEffects?: boolean;
  timeoutMs?: number;
  retryPolicy?: { maxAttempts: number; initialBackoffMs?: number; maxBackoffMs?: number };
  /** Returns the output object (or ctx.defer(…)); throw ToolError for a failure with a code. */
  handler: (args: Args, ctx: ToolContext) => Promise<JsonObject | Deferred> | JsonObject | Deferred;
}

/** Declares a tool; the identity function with types, so definitions read as data. */
export function defineTool<Args = JsonObject>(
  definition: ToolDefinition<Args>,
): ToolDefinition<Args> {
  if (!/^[a-z][a-z0-9_.-]{0,63}$/.test(definition.name)) {
    throw new Error(
      `tool name "${definition.name}" must be 1-64 characters of [a-z0-9_.-] starting with a letter`,
    );
  }
  return definition;
}

/** Narrows a JSON value to an object. */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
