import { CallStatus } from "@toolmesh/proto";
import { eventually } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { clusterRunPerBlock, runCalls, verifyRecords } from "./cluster-run.js";

const CALLS = Number(process.env.SUPERVISION_CALLS ?? 2000);
const CONCURRENCY = 32;
const VICTIM = "dispatcher-2";

// `TOOLMESH_CLUSTER=3 npm start` under calls from several agents through a client balancing over
// both Dispatchers: kill -9 of one Dispatcher replica from outside (as the OOM killer would). The
// launcher starts it again at its address while the other replica, Audit and Callback keep
// serving; afterwards every acked call has exactly one audit record, callback event and memory
// entry.
describe("a Dispatcher replica killed on a three-node cluster", () => {
  const clusterRun = clusterRunPerBlock();

  it(`is restarted by the launcher while ${CALLS} calls at concurrency ${CONCURRENCY} go on`, async () => {
    const run = clusterRun();
    const { stack } = run;
    const victim = stack.service(VICTIM);
    const { url } = victim;
    const auditor = stack.as(await stack.agentToken("cluster-auditor", { roles: ["auditor"] }));
    const agent = stack.as(await stack.agentToken("cluster-a"));
    let killedAt = 0;
    let backAt = 0;
    const probes = { audit: 0, callback: 0, failures: [] as string[] };
    /** Asks Audit and Callback about a call acked before the kill; each must answer. */
    const probe = async (callId: string) => {
      try {
        const res = await stack.auditClient().queryRecords({ callId }, auditor);
        expect(res.records.length).toBeGreaterThan(0);
        probes.audit++;
      } catch (error) {
        probes.failures.push(`audit: ${String(error)}`);
      }
      try {
        const res = await stack.callbackClient().getOutcome({ callId }, agent);
        expect(res.event?.status).toBe(CallStatus.SUCCESS);
        probes.callback++;
      } catch (error) {
        probes.failures.push(`callback: ${String(error)}`);
      }
    };

    await runCalls(
      run,
      { calls: CALLS, concurrency: CONCURRENCY, gap: Math.floor(CALLS / 4) },
      async ({ fault }) => {
        await fault(`kill -9 of ${VICTIM}, restarted by the launcher`, async () => {
          // A call of the agent the probe asks as, long enough ago to be everywhere.
          const earlier = run.results.find((r) => r.kind === "acked" && r.agent === "cluster-a");
          if (!earlier) throw new Error("no call was acked before the fault");
          const killed = victim.pid;
          killedAt = Date.now();
          process.kill(killed, "SIGKILL");
          await eventually(
            async () => {
              await probe(earlier.callId);
              const state = stack.stackFile().processes[VICTIM];
              if (!state?.pid || state.pid === killed) throw new Error(`${VICTIM} is not back yet`);
            },
            60_000,
            `the launcher to restart ${VICTIM}`,
          );
          backAt = Date.now();
        });
      },
    );

    console.info(
      `${VICTIM}: kill -9 to SERVING in ${backAt - killedAt} ms; ${stack.launcherLines.find((l) => l.startsWith(`${VICTIM} is back`))}`,
    );
    expect(victim.url).toBe(url);
    expect(stack.stackFile().processes[VICTIM]).toMatchObject({
      restarts: 1,
      lastExit: "signal SIGKILL",
    });
    // Until the launcher had it SERVING again, Audit and Callback answered every time.
    expect(probes.failures, probes.failures.slice(0, 3).join("\n")).toEqual([]);
    expect(probes.audit).toBeGreaterThan(0);
    expect(probes.callback).toBeGreaterThan(0);
    // The surviving replica acked calls that started while the victim was down.
    const whileDown = run.results.filter(
      (r) => r.kind === "acked" && r.startedAt >= killedAt && r.startedAt < backAt,
    );
    expect(whileDown.length).toBeGreaterThan(0);
    // No other process was restarted: only the killed one went down.
    for (const [name, state] of Object.entries(stack.stackFile().processes)) {
      if (name !== VICTIM) expect(state.restarts, name).toBe(0);
    }
    expect(run.results.length).toBeGreaterThanOrEqual(CALLS);
    await verifyRecords(run, "supervision");
  }, 600_000);
});
