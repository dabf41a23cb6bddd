import { defineConfig } from "vitest/config";

// The tests that run tools in containers: they need a Docker Engine (dockerd), and skip with one
// line saying so where there is none. `npm test` runs them after the rest (npm run test:docker).
export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: ["**/*.docker.test.ts"],
    exclude: ["**/node_modules/**"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
