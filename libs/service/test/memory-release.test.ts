import { createLogger } from "@toolmesh/log";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MemoryRelease } from "../src/memory-release.js";

const log = createLogger("memory-release-test", "silent");

/**
 * When a burst of long-lived work ends, one memory-reducing collection runs: not for small
 * bursts, not while the work is still high, not twice within the interval, not when the work came
 * back before it ran. The collection itself is V8's; here a counter stands in for it.
 */
describe("memory release after a burst", () => {
  let collected: number;
  let release: MemoryRelease;
  beforeEach(() => {
    vi.useFakeTimers();
    collected = 0;
    release = new MemoryRelease({
      what: "watches",
      minPeak: 100,
      minIntervalMs: 30_000,
      delayMs: 1000,
      log,
      collect: () => collected++,
    });
  });
  afterEach(() => {
    release.stop();
    vi.useRealTimers();
  });

  const rampTo = (from: number, to: number) => {
    const step = from < to ? 1 : -1;
    for (let n = from; n !== to; n += step) release.track(n + step);
  };

  it("collects once, a second after the work fell to a quarter of its peak and stopped changing", () => {
    rampTo(0, 2000);
    rampTo(2000, 600);
    vi.advanceTimersByTime(5000);
    expect(collected).toBe(0);
    rampTo(600, 300);
    vi.advanceTimersByTime(900);
    // More closings: the collection waits for the wave to end.
    rampTo(300, 0);
    vi.advanceTimersByTime(999);
    expect(collected).toBe(0);
    vi.advanceTimersByTime(1);
    expect(collected).toBe(1);
  });

  it("leaves a small burst alone", () => {
    rampTo(0, 99);
    rampTo(99, 0);
    vi.advanceTimersByTime(60_000);
    expect(collected).toBe(0);
  });

  it("waits out the interval between two collections, and skips one whose work came back", () => {
    rampTo(0, 500);
    rampTo(500, 0);
    vi.advanceTimersByTime(1000);
    expect(collected).toBe(1);
    rampTo(0, 500);
    rampTo(500, 0);
    // 30 s after the first, not 1 s after the burst.
    vi.advanceTimersByTime(29_999);
    expect(collected).toBe(1);
    vi.advanceTimersByTime(1);
    expect(collected).toBe(2);
    rampTo(0, 500);
    rampTo(500, 100);
    rampTo(100, 400);
    vi.advanceTimersByTime(60_000);
    expect(collected).toBe(2);
  });
});
