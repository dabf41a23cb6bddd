import type { JsonObject } from "@bufbuild/protobuf";
import { type BackendEvent, TraceEventKind } from "@toolmesh/proto";
import type { CallRecord } from "../records/call-recorder.js";
import { type CallerChannel, CallerRefusal, type CallerSide } from "../runtimes/runtime.js";

/** Kinds a backend may emit; anything else is published as CUSTOM with its name. */
const BACKEND_KINDS = new Set([
  TraceEventKind.DATA_QUERY,
  TraceEventKind.DATA_RESULT,
  TraceEventKind.CUSTOM,
]);

/** A backend's own trace event (DATA_QUERY …), filed under the call. */
export function traceBackendEvent(record: CallRecord, event: BackendEvent): void {
  const kind = BACKEND_KINDS.has(event.kind) ? event.kind : TraceEventKind.CUSTOM;
  record.trace(kind, event.payload ?? {}, {
    customKind:
      kind === TraceEventKind.CUSTOM
        ? event.customKind || TraceEventKind[event.kind] || "CUSTOM"
        : "",
    ...(event.time
      ? { timeMs: Number(event.time.seconds) * 1000 + Math.floor(event.time.nanos / 1e6) }
      : {}),
  });
}

/**
 * The caller's channel as the tool uses it: each question and answer is filed under the call
 * (INPUT_REQUESTED, INPUT_ANSWERED, redacted as arguments are), so the end record holds them.
 */
export function recordedCaller(
  record: CallRecord,
  caller: CallerSide,
  deadlineMs: number,
): CallerChannel {
  const { callId, traceId, tool } = record.call;
  const call = { callId, traceId, tool, deadlineMs };
  const presupplied: Record<string, JsonObject> = caller.presupplied ?? {};
  for (const [key, result] of Object.entries(presupplied))
    record.trace(TraceEventKind.INPUT_ANSWERED, { key, result, with_call: true });
  return {
    capabilities: caller.capabilities,
    presupplied: caller.presupplied,
    logLevel: caller.logLevel,
    async ask(key, request) {
      record.trace(TraceEventKind.INPUT_REQUESTED, {
        key,
        method: request.method,
        params: request.params,
      });
      try {
        const result = await caller.ask(key, request, call);
        record.trace(TraceEventKind.INPUT_ANSWERED, { key, result });
        return result;
      } catch (error) {
        const refusal =
          error instanceof CallerRefusal
            ? { code: error.code, message: error.message }
            : { code: -32603, message: String(error) };
        record.trace(TraceEventKind.INPUT_ANSWERED, { key, error: refusal as JsonObject });
        throw error;
      }
    },
  };
}
