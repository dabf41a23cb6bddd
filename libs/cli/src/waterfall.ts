// The waterfall of one trace: when each event of each call happened and how long its step took.
// Pure data, shared by the CLI (`toolmesh trace`) and the web console's trace page.

/** One trace event, as either client reads it from AuditService.GetTrace. */
export interface WaterfallEvent {
  /** The kind without its prefix: TOOL_EXECUTE, DATA_QUERY, TOOL_RESULT, CALLBACK_SUCCESS … */
  kind: string;
  /** Epoch milliseconds. */
  timeMs: number;
  callId: string;
  tool: string;
  /** For CUSTOM events, the backend's own name. */
  customKind?: string;
}

/** One bar of the waterfall. */
export interface WaterfallRow {
  label: string;
  kind: string;
  callId: string;
  tool: string;
  /** Milliseconds after the trace's first event. */
  offsetMs: number;
  /** How long the step took, up to the event that ends it (0 for a point event). */
  durationMs: number;
}

export interface Waterfall {
  rows: WaterfallRow[];
  /** From the first event to the last. */
  totalMs: number;
}

/** The event that ends a step, per call: the tool ran until its result, a query until its rows. */
const ENDS: Record<string, (kind: string) => boolean> = {
  TOOL_EXECUTE: (k) => k === "TOOL_RESULT",
  DATA_QUERY: (k) => k === "DATA_RESULT",
  TOOL_ATTEMPT: (k) => k === "TOOL_ATTEMPT" || k === "TOOL_RESULT",
  // From the recorded result to the normalised, broadcast outcome.
  TOOL_RESULT: (k) => k.startsWith("CALLBACK_"),
};

/** Where an event stands in its call's chain: execute, the backend's events, the result, the callback. */
function stage(kind: string): number {
  if (kind === "TOOL_EXECUTE") return 0;
  if (kind === "TOOL_RESULT" || kind === "TOOL_REFUSED") return 2;
  if (kind.startsWith("CALLBACK_")) return 3;
  return 1;
}

/**
 * Builds the rows of a trace: calls in the order they started, each call's events in chain order
 * (events come from several processes, whose clocks may disagree by a millisecond, so a
 * callback is never drawn before the result it reports), then by time.
 */
export function buildWaterfall(events: WaterfallEvent[]): Waterfall {
  const callStart = new Map<string, number>();
  for (const e of events)
    callStart.set(e.callId, Math.min(callStart.get(e.callId) ?? e.timeMs, e.timeMs));
  const sorted = [...events].sort(
    (a, b) =>
      (callStart.get(a.callId) ?? 0) - (callStart.get(b.callId) ?? 0) ||
      a.callId.localeCompare(b.callId) ||
      stage(a.kind) - stage(b.kind) ||
      a.timeMs - b.timeMs,
  );
  // A later stage starts no earlier than the one before it in the same call.
  const at = new Map<WaterfallEvent, number>();
  let previous: WaterfallEvent | undefined;
  for (const e of sorted) {
    const floor = previous?.callId === e.callId ? (at.get(previous) ?? e.timeMs) : e.timeMs;
    at.set(e, Math.max(e.timeMs, floor));
    previous = e;
  }
  const first = Math.min(...events.map((e) => e.timeMs));
  const rows = sorted.map((event, index) => {
    const ends = ENDS[event.kind];
    const end = ends
      ? sorted.slice(index + 1).find((e) => e.callId === event.callId && ends(e.kind))
      : undefined;
    const start = at.get(event) ?? event.timeMs;
    return {
      label: event.kind === "CUSTOM" && event.customKind ? event.customKind : event.kind,
      kind: event.kind,
      callId: event.callId,
      tool: event.tool,
      offsetMs: start - first,
      durationMs: end ? Math.max(0, (at.get(end) ?? end.timeMs) - start) : 0,
    };
  });
  const totalMs = rows.length ? Math.max(...rows.map((r) => r.offsetMs + r.durationMs)) : 0;
  return { rows, totalMs };
}
