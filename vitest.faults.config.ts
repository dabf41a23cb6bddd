import { defineConfig } from "vitest/config";

// npm run test:faults: the trust rules under faults, each file a stack of its own that it kills,
// fills up or stops parts of — nothing runs unrecorded (fail-closed), kill -9 of every process
// (faults), a consumer stopped for a while (record-backlog), every per-call stream limited to
// 8 MiB under 30,000 calls (stream-limits), nats-server killed under 2,000 calls (one-story). One
// file at a time: each wants the machine's cores, and its timings mean something only alone.
// FAULTS_CALLS, LIMITS_CALLS and STORY_CALLS set their load.
export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: [
      "test/fail-closed.test.ts",
      "test/faults.test.ts",
      "test/record-backlog.test.ts",
      "test/stream-limits.test.ts",
      "test/one-story.test.ts",
    ],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
