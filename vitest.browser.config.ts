import { defineConfig } from "vitest/config";

// npm run test:browser: the console in Debian's chromium (playwright-core) against a whole stack.
export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: ["services/*/test/**/*.browser.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
