import { describe, expect, it } from "vitest";
import { callTimeOf, generatedCallTime, newCallId, newTraceId, traceKey } from "../src/index.js";

describe("call ids the Dispatcher makes", () => {
  it("carry the time they were made, and only they do", () => {
    const at = Date.UTC(2026, 10, 26, 2, 30, 0, 123);
    const id = newCallId(at);
    expect(id).toMatch(/^tm-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(callTimeOf(id)).toBe(at);
    expect(generatedCallTime(id)?.random12).toBe(Number.parseInt(id.slice(18, 21), 16));
    expect(newCallId(at)).not.toBe(id);
    for (const chosen of ["my-call", "tm-1234", "tm-4b9e1c2a-1f2b-4c3d-8e9f-0a1b2c3d4e5f", ""])
      expect(callTimeOf(chosen)).toBeUndefined();
  });

  it("sort by time as text, so later calls have later ids", () => {
    const ids = [0, 1, 1000, 86_400_000].map((d) => newCallId(Date.UTC(2026, 0, 1) + d));
    expect([...ids].sort()).toEqual(ids);
  });

  it("makes W3C trace ids that begin with their time, and keys any trace id by its first 52 bits", () => {
    const times = [0, 1, 1000, 86_400_000].map((d) => Date.UTC(2026, 0, 1) + d);
    const ids = times.map((t) => newTraceId(t));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(ids.map((id) => Number.parseInt(id.slice(0, 12), 16))).toEqual(times);
    const keys = ids.map((id) => traceKey(id) as number);
    expect([...keys].sort((a, b) => a - b)).toEqual(keys);
    for (const k of keys) expect(Number.isSafeInteger(k)).toBe(true);
    expect(traceKey("4bf92f3577b34da6a3ce929d0e0e4736")).toBe(0x4bf92f3577b34);
    expect(traceKey("not-a-trace")).toBeUndefined();
    expect(newTraceId()).not.toBe(newTraceId());
  });
});
