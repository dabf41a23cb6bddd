import { create } from "@bufbuild/protobuf";
import { WarmHoursSchema } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { warmInstances } from "../src/runtimes/warm-hours.js";

// When a tool's min_instances apply: inside one of its warm_hours windows (UTC, end exclusive,
// on its weekdays), or always when it has none.
describe("warm hours", () => {
  const office = create(WarmHoursSchema, { startHour: 8, endHour: 18, weekdays: [1, 2, 3, 4, 5] });
  const late = create(WarmHoursSchema, { startHour: 22, endHour: 24 });
  // Friday 27 November 2026 and the Saturday after, UTC.
  const at = (day: number, hour: number, minute = 0) => Date.UTC(2026, 10, day, hour, minute);

  it("keeps min_instances always when no window is set, and none when min_instances is 0", () => {
    expect(warmInstances({ minInstances: 2, warmHours: [] }, at(28, 3))).toBe(2);
    expect(warmInstances({ minInstances: 0, warmHours: [office] }, at(27, 9))).toBe(0);
  });

  it("applies from start_hour up to end_hour, on the window's weekdays only", () => {
    const spec = { minInstances: 1, warmHours: [office, late] };
    expect(warmInstances(spec, at(27, 7, 59))).toBe(0);
    expect(warmInstances(spec, at(27, 8))).toBe(1);
    expect(warmInstances(spec, at(27, 17, 59))).toBe(1);
    expect(warmInstances(spec, at(27, 18))).toBe(0);
    // Saturday: not an office day, but the late window has no weekdays and applies every day.
    expect(warmInstances(spec, at(28, 9))).toBe(0);
    expect(warmInstances(spec, at(28, 23, 30))).toBe(1);
  });
});
