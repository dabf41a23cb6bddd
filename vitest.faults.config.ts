import { defineConfig } from "vitest/config";

// npm run test:faults: the trust rules under faults, each file a stack of its own that it kills,
// fills up or stops parts of — nothing runs unrecorded (fail-closed), kill -9 of every process
// (faults), a consumer stopped for a while (record-backlog), every per-call stream limited to
// 8 MiB under 30,000 calls (stream-limits), nats-server killed under 2,000 calls (one-story), a
// restart after 100,000 calls compared with a fresh start in time and CPU (history-restart). One
// file at a time: each wants the machine's cores, and its timings mean something only alone.
// FAULTS_CALLS, LIMITS_CALLS and STORY_CALLS set their load.
/** The fault suites' files: run here one at a time, and left out of the default vitest run. */
export const FAULT_FILES = [
  "test/fail-closed.test.ts",
  "test/faults.test.ts",
  "test/record-backlog.test.ts",
  "test/stream-limits.test.ts",
  "test/one-story.test.ts",
  "test/history-restart.test.ts",
];

export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: [...FAULT_FILES],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
