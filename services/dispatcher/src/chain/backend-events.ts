import { type BackendEvent, TraceEventKind } from "@toolmesh/proto";
import type { CallRecord } from "../records/call-recorder.js";

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
