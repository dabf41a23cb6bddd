import { describe, expect, it } from "vitest";
import { callTimeOf, generatedCallTime, newCallId } from "../src/index.js";

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
});
