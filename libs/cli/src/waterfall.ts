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

/** Builds the rows of a trace, in time order. */
export function buildWaterfall(events: WaterfallEvent[]): Waterfall {
  const sorted = [...events].sort((a, b) => a.timeMs - b.timeMs);
  const first = sorted[0]?.timeMs ?? 0;
  const last = sorted.at(-1)?.timeMs ?? first;
  const rows = sorted.map((event, index) => {
    const ends = ENDS[event.kind];
    const end = ends
      ? sorted.slice(index + 1).find((e) => e.callId === event.callId && ends(e.kind))
      : undefined;
    return {
      label: event.kind === "CUSTOM" && event.customKind ? event.customKind : event.kind,
      kind: event.kind,
      callId: event.callId,
      tool: event.tool,
      offsetMs: event.timeMs - first,
      durationMs: end ? end.timeMs - event.timeMs : 0,
    };
  });
  return { rows, totalMs: last - first };
}
