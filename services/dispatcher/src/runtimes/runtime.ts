import type { JsonObject } from "@bufbuild/protobuf";
import type { BackendEvent, CallError, InvokeRequest, Tool } from "@toolmesh/proto";

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
