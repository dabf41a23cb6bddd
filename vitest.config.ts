import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: ["libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // Tests that need a Docker Engine or a browser run apart: npm run test:docker
    // (vitest.docker.config.ts) and npm run test:browser (vitest.browser.config.ts).
    exclude: ["**/node_modules/**", "**/*.docker.test.ts", "**/*.browser.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real processes; two cores do not run many at once well.
    fileParallelism: true,
    maxWorkers: 2,
    minWorkers: 1,
  },
});
