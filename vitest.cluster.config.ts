import { defineConfig } from "vitest/config";

// npm run test:cluster: the three-node cluster under faults (test/cluster.test.ts), alone, since
// it runs fifteen processes and wants the machine's cores to itself. CLUSTER_CALLS sets its load.
export default defineConfig({
  test: {
    include: ["test/cluster.test.ts"],
    testTimeout: 900_000,
    hookTimeout: 240_000,
    fileParallelism: false,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
