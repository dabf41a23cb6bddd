import { defineConfig } from "vitest/config";

// npm run test:cluster: the three-node cluster under faults (test/cluster.test.ts), with a node
// partitioned (test/cluster-partition.test.ts) and with a Dispatcher replica killed for the
// launcher to restart (test/cluster-supervision.test.ts), one after the other and alone, since each
// runs fifteen processes and wants the machine's cores to itself. CLUSTER_CALLS, PARTITION_CALLS
// and SUPERVISION_CALLS set their load.
export default defineConfig({
  test: {
    // Builds dist/ when stale, so service processes run compiled JavaScript.
    globalSetup: ["test/global-setup.ts"],
    include: [
      "test/cluster.test.ts",
      "test/cluster-partition.test.ts",
      "test/cluster-supervision.test.ts",
    ],
    testTimeout: 900_000,
    hookTimeout: 240_000,
    fileParallelism: false,
    maxWorkers: 1,
    minWorkers: 1,
  },
});
