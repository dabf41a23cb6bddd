import { type IsolatedHost, isolatedHost } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClusterRun, runCalls, startClusterRun, verifyRecords } from "./cluster-run.js";

const CALLS = Number(process.env.PARTITION_CALLS ?? 1000);
const isolated: IsolatedHost | string = isolatedHost();
if (typeof isolated === "string") console.info(`partition test skipped: ${isolated}`);

// The third node of the cluster runs in a network namespace of its own, joined by a veth pair;
// taking the link down for 10 s cuts it off from its peers and from the services connected to it,
// as a switch failure would. The majority side goes on; after the link is back and the node has
// caught up, every acked call has its records.
describe.skipIf(typeof isolated === "string")(
  "a three-node cluster with one node partitioned",
  () => {
    let run: ClusterRun;
    const host = isolated as IsolatedHost;

    beforeAll(async () => {
      run = await startClusterRun([undefined, undefined, { host: host.host, wrap: host.wrap }]);
    }, 240_000);

    afterAll(async () => {
      try {
        await run?.served.close();
        await run?.stack.stop();
      } finally {
        host.destroy();
      }
    });

    it(`${CALLS} calls at concurrency 32 while one node is cut off for 10 s`, async () => {
      await runCalls(
        run,
        { calls: CALLS, concurrency: 32, gap: Math.floor(CALLS / 4) },
        async ({ fault }) => {
          await fault("one NATS node partitioned for 10 s", async () => {
            host.cut();
            try {
              // The fault is a partition of this length; there is no event to wait for.
              await new Promise((resolve) => setTimeout(resolve, 10_000));
            } finally {
              host.heal();
            }
          });
        },
      );
      expect(run.results.length).toBeGreaterThanOrEqual(CALLS);
      await verifyRecords(run, "partition");
    }, 600_000);
  },
);
