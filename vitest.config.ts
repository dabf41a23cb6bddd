import { defineConfig } from "vitest/config";
import { FAULT_FILES } from "./vitest.faults.config.js";

export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: ["libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // Tests that need a Docker Engine, a browser or the machine to themselves run apart:
    // npm run test:docker, npm run test:browser, npm run test:faults and npm run test:cluster
    // (vitest.*.config.ts).
    exclude: [
      "**/node_modules/**",
      "**/*.docker.test.ts",
      "**/*.browser.test.ts",
      "test/cluster.test.ts",
      "test/cluster-partition.test.ts",
      "test/cluster-supervision.test.ts",
      ...FAULT_FILES,
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real processes; two cores do not run many at once well.
    fileParallelism: true,
    maxWorkers: 2,
    minWorkers: 1,
  },
});
