import { afterAll, beforeAll, beforeEach } from "vitest";

/**
 * Starts what `start` makes before the calling test file's first test and stops it after its last.
 * The object returned takes on its fields once started, so tests read `stack.client` as they
 * would a variable the file assigned in its own beforeAll.
 */
export function startedForFile<T extends { stop(): Promise<void> }>(
  start: () => Promise<T>,
  timeoutMs = 60_000,
): T {
  const started = {} as T;
  beforeAll(async () => {
    Object.assign(started, await start());
  }, timeoutMs);
  afterAll(async () => {
    // Undefined when the start failed; what it started it stopped itself.
    await (started.stop as T["stop"] | undefined)?.call(started);
  });
  return started;
}

/** Makes what `make` makes afresh before each test of the calling file; the same holder as above. */
export function freshForEachTest<T extends object>(make: () => Promise<T>): T {
  const current = {} as T;
  beforeEach(async () => {
    Object.assign(current, await make());
  });
  return current;
}
