import { describe, expect, it } from "vitest";
import { buildWaterfall } from "../src/waterfall.js";

const event = (kind: string, timeMs: number, callId = "c1") => ({
  kind,
  timeMs,
  callId,
  tool: "t",
});

describe("trace waterfall", () => {
  it("gives each step its duration up to the event that ends it", () => {
    const { rows, totalMs } = buildWaterfall([
      event("CALLBACK_SUCCESS", 1012),
      event("TOOL_EXECUTE", 1000),
      event("DATA_QUERY", 1002),
      event("TOOL_RESULT", 1010),
      event("DATA_RESULT", 1007),
    ]);
    expect(rows.map((r) => [r.kind, r.offsetMs, r.durationMs])).toEqual([
      ["TOOL_EXECUTE", 0, 10],
      ["DATA_QUERY", 2, 5],
      ["DATA_RESULT", 7, 0],
      ["TOOL_RESULT", 10, 2],
      ["CALLBACK_SUCCESS", 12, 0],
    ]);
    expect(totalMs).toBe(12);
  });

  it("never draws a callback before its result when process clocks disagree", () => {
    const { rows } = buildWaterfall([
      event("TOOL_EXECUTE", 1000),
      event("CALLBACK_SUCCESS", 1022),
      event("TOOL_RESULT", 1023),
    ]);
    expect(rows.map((r) => [r.kind, r.offsetMs, r.durationMs])).toEqual([
      ["TOOL_EXECUTE", 0, 23],
      ["TOOL_RESULT", 23, 0],
      ["CALLBACK_SUCCESS", 23, 0],
    ]);
  });

  it("keeps the calls of a batch apart, in the order they started, and names custom events", () => {
    const { rows } = buildWaterfall([
      event("TOOL_EXECUTE", 5, "b"),
      { ...event("CUSTOM", 6, "b"), customKind: "CACHE_HIT" },
      event("TOOL_EXECUTE", 1, "a"),
      event("TOOL_RESULT", 9, "a"),
      event("TOOL_RESULT", 7, "b"),
    ]);
    expect(rows.map((r) => `${r.callId}:${r.label}`)).toEqual([
      "a:TOOL_EXECUTE",
      "a:TOOL_RESULT",
      "b:TOOL_EXECUTE",
      "b:CACHE_HIT",
      "b:TOOL_RESULT",
    ]);
    expect(buildWaterfall([])).toEqual({ rows: [], totalMs: 0 });
  });
});
