import type { JsonObject } from "@bufbuild/protobuf";
import type { BackendEvent, CallError, InvokeRequest, Tool } from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";

/** One attempt to run a tool on its backend. */
export interface Attempt {
  tool: Tool;
  /** What the backend receives; never carries the agent's credential. */
  request: InvokeRequest;
  /** Aborted on timeout, cancel or shutdown; the runtime stops the backend call at once. */
  signal: AbortSignal;
  /** A trace event the backend streamed. */
  onEvent(event: BackendEvent): void;
  /** The W3C traceparent of this attempt's span, sent to the backend so its spans join the trace. */
  traceparent?: string | undefined;
  /** The caller, when it can answer what the tool asks mid-call (MCP clients, AnswerInput). */
  caller?: CallerChannel | undefined;
  /** The tool's secrets for this caller, to inject into the backend request only (withSecrets). */
  secrets?: CallSecretValues | undefined;
}

/** One question a tool asks its caller mid-call: an MCP request, answered with its result. */
export interface InputRequest {
  /** `elicitation/create`, `sampling/createMessage` or `roots/list`. */
  method: string;
  params: JsonObject;
}

/**
 * The way back to a call's caller, for an MCP tool that asks for input mid-call (elicitation,
 * sampling, roots) and for its log messages. Each transport has its own: an MCP 2025-11-25
 * client is asked on the request's stream, a 2026-07-28 client and a gRPC caller get the call
 * PENDING with `input_required` and answer later.
 */
export interface CallerChannel {
  /** What the caller can answer: its MCP client capabilities (`elicitation`, `sampling`, `roots`). */
  readonly capabilities: JsonObject;
  /**
   * Asks the caller; resolves with its answer (the request's MCP result). Rejects with a
   * CallerRefusal when the caller cannot or did not answer, or when the call ends first.
   */
  ask(key: string, request: InputRequest): Promise<JsonObject>;
  /** Answers the caller sent with the call itself (MCP 2026-07-28 `inputResponses`), by key. */
  readonly presupplied?: Record<string, JsonObject> | undefined;
  /** The lowest MCP log level the caller wants the tool's log messages at; none when unset. */
  readonly logLevel?: string | undefined;
}

/** The call a question comes from, as the caller's side of a transport needs to know it. */
export interface AskingCall {
  callId: string;
  traceId: string;
  tool: string;
  /** Epoch ms by which the call must be over: no answer helps after that. */
  deadlineMs: number;
}

/**
 * A transport's side of a caller channel: the chain hands it each question with the call it
 * comes from (and files both under the call); the runtime sees a CallerChannel.
 */
export interface CallerSide {
  readonly capabilities: JsonObject;
  readonly presupplied?: Record<string, JsonObject> | undefined;
  readonly logLevel?: string | undefined;
  ask(key: string, request: InputRequest, call: AskingCall): Promise<JsonObject>;
}

/** Why a caller did not answer: an MCP error the tool receives in place of the answer. */
export class CallerRefusal extends Error {
  override readonly name = "CallerRefusal";
  constructor(
    /** The JSON-RPC error code the tool gets (-32601: the caller lacks the capability). */
    readonly code: number,
    message: string,
    readonly data?: JsonObject,
  ) {
    super(message);
  }
}

/**
 * How an attempt ended. transient failures may be retried for idempotent tools; costMicros is
 * what the tool reported the attempt cost it (InvokeResult.cost_micros, or the HTTP response
 * header `toolmesh-cost-micros`).
 */
export type AttemptResult =
  | { ok: true; output: JsonObject; pending?: boolean; costMicros?: bigint }
  | { ok: false; error: CallError; transient: boolean; costMicros?: bigint };

/** The response header an HTTP tool reports its own cost in (millionths of its currency). */
export const COST_HEADER = "toolmesh-cost-micros";

/** Runs attempts for one kind of runtime. */
export interface ToolRuntime {
  invoke(attempt: Attempt): Promise<AttemptResult>;
  close?(): Promise<void>;
}

/** Backend events kept per call; more are dropped so a chatty backend cannot flood the trace. */
export const MAX_BACKEND_EVENTS = 1000;
