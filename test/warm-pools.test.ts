import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AuditAction,
  CallStatus,
  type LocalRuntimeSchema,
  RuntimeState,
  type RuntimeStatus,
  ToolSpecSchema,
} from "@toolmesh/proto";
import {
  type CallRecords,
  collectRecords,
  eventually,
  localHttpRuntime,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Warm pools against real processes: local HTTP tools (testkit's localHttpRuntime, which answers
// with its pid) with min_instances, max_instances, warm hours and health checks.
describe("warm pools", () => {
  let stack: TestStack;
  let records: CallRecords;
  let token: string;
  /** Processes this test stopped with SIGSTOP: killed at the end if the Dispatcher has not yet. */
  const frozen: number[] = [];
  const admin = () => stack.as(stack.adminToken);
  const call = (tool: string, args: JsonObject = {}, traceId?: string) =>
    stack
      .dispatcherClient()
      .dispatch(
        { tool, arguments: args, ...(traceId ? { context: { traceId } } : {}) },
        stack.as(token),
      );
  const statusOf = async (tool: string): Promise<RuntimeStatus> => {
    const status = (await stack.dispatcherClient().getRuntimeStatus({ tool }, admin())).runtimes[0];
    if (!status) throw new Error(`no runtime status of ${tool}`);
    return status;
  };
  /** A tool's status and running instances; throws unless there are `count` of them. */
  const runningNow = async (tool: string, count: number) => {
    const status = await statusOf(tool);
    const up = status.instances.filter((i) => i.state === RuntimeState.RUNNING);
    expect(up.length).toBe(count);
    return { status, up };
  };
  const running = (tool: string, count: number) =>
    eventually(() => runningNow(tool, count), 20_000);
  const register = (
    name: string,
    pool: MessageInitShape<typeof LocalRuntimeSchema>,
    circuitBreaker?: { failures: number },
  ) =>
    stack.registryClient.registerTool(
      {
        tool: create(ToolSpecSchema, {
          name,
          description: "A local HTTP tool that answers with its pid.",
          inputSchema: { type: "object" },
          idempotent: true,
          ...(circuitBreaker ? { circuitBreaker } : {}),
          runtime: localHttpRuntime(pool),
        }),
      },
      admin(),
    );
  const hour = new Date().getUTCHours();

  beforeAll(async () => {
    stack = await startStack();
    records = collectRecords(stack.nc);
    token = await stack.agentToken("pool-bot");
    await stack.grantAll("pool-bot");
    await register("pool.warm", { minInstances: 1 });
    await register("pool.crash", { minInstances: 1, maxInstances: 2 });
    await register("pool.spread", { maxInstances: 2 });
    await register("pool.health", { minInstances: 1, healthIntervalMs: 200 });
    await register("pool.operator", { maxInstances: 2 });
    await register("pool.flaky", { minInstances: 2, maxInstances: 2 }, { failures: 2 });
    // Warm in the hour it is now, and in a window three hours away from it.
    await register("pool.now", {
      minInstances: 1,
      warmHours: [{ startHour: hour, endHour: hour + 1 }],
    });
    const later = (hour + 3) % 24;
    await register("pool.later", {
      minInstances: 1,
      warmHours: [{ startHour: later, endHour: later + 1 }],
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    for (const pid of frozen) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone: the Dispatcher stopped it.
      }
    }
  });

  it("keeps min_instances running before any call: the first call waits for no start, and counts a start saved", async () => {
    const { up } = await running("pool.warm", 1);
    expect(up[0]).toMatchObject({ id: 1, startedFor: "warm", calls: 0n });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await call("pool.warm", { q: 1 }, traceId);
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output?.pid).toBe(up[0]?.pid);
    // Its trace, derived from its records, says it found a warm instance, and never waited.
    const events = await records.traces.waitFor(
      (e) => e.traceId === traceId && e.customKind === "START_SAVED",
    );
    expect(events[0]?.payload).toEqual({ instance: 1, started_for: "warm" });
    const all = await records.traces.waitFor((e) => e.traceId === traceId, 4);
    expect(all.some((e) => e.customKind === "INSTANCE_START_WAIT")).toBe(false);
    const status = await statusOf("pool.warm");
    expect(status).toMatchObject({
      minInstances: 1,
      maxInstances: 1,
      startsSaved: 1n,
      kind: "local",
    });
    expect(status.instances[0]?.calls).toBe(1n);
    // A second call on the same instance saved nothing more: the first call's would have started it.
    await call("pool.warm");
    expect((await statusOf("pool.warm")).startsSaved).toBe(1n);
  });

  it("replaces an instance killed with SIGKILL, and calls keep succeeding on its replacement", async () => {
    const { up } = await running("pool.crash", 1);
    const killed = up[0]?.pid as number;
    process.kill(killed, "SIGKILL");
    const { status, up: after } = await eventually(async () => {
      const r = await runningNow("pool.crash", 1);
      expect(r.up[0]?.pid).not.toBe(killed);
      return r;
    }, 20_000);
    expect(after[0]).toMatchObject({ id: 2, startedFor: "replace", restarts: 1 });
    expect(after[0]?.lastError).toContain("SIGKILL");
    expect(status.restarts).toBe(1);
    for (let i = 0; i < 3; i++) {
      const res = await call("pool.crash", { i });
      expect(res.status).toBe(CallStatus.SUCCESS);
      expect(res.output?.pid).toBe(after[0]?.pid);
    }
  });

  it("spreads concurrent calls over two instances, the second started ahead when the first was busy", async () => {
    const pids = new Set<unknown>();
    const status = await eventually(async () => {
      const wave = await Promise.all(
        [1, 2, 3, 4].map((i) => call("pool.spread", { i, sleep_ms: 300 })),
      );
      for (const res of wave) {
        expect(res.status).toBe(CallStatus.SUCCESS);
        pids.add(res.output?.pid);
      }
      const s = await statusOf("pool.spread");
      expect(s.instances.map((i) => i.calls > 0n)).toEqual([true, true]);
      return s;
    }, 30_000);
    expect(status.instances.map((i) => i.startedFor)).toEqual(["call", "ahead"]);
    expect(pids.size).toBe(2);
    expect(status.maxInstances).toBe(2);
    // The calls that found the instance started ahead did not wait for its start.
    expect(status.startsSaved).toBe(1n);
  });

  it("takes out an instance that fails two health checks in a row and replaces it", async () => {
    const { up } = await running("pool.health", 1);
    const stuck = up[0]?.pid as number;
    // A stopped process holds its port but answers nothing: alive, and unhealthy.
    process.kill(stuck, "SIGSTOP");
    frozen.push(stuck);
    const { status, up: after } = await eventually(async () => {
      const r = await runningNow("pool.health", 1);
      expect(r.up[0]?.pid).not.toBe(stuck);
      return r;
    }, 20_000);
    expect(after[0]).toMatchObject({ startedFor: "replace", healthFailures: 0 });
    expect(after[0]?.lastError).toMatch(/^failed 2 health checks in a row: /);
    expect(status.restarts).toBe(1);
    const res = await call("pool.health");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output?.pid).toBe(after[0]?.pid);
  });

  it("takes out an instance whose own calls keep failing while the other serves, and records it", async () => {
    const { up } = await running("pool.flaky", 2);
    const [first, second] = up;
    // A slow call holds the first instance; the next call goes to the idle second one and fails.
    // The slow call's success ends the tool's run of failures, not the second instance's.
    for (let round = 0; round < 2; round++) {
      const slow = call("pool.flaky", { sleep_ms: 500 });
      await eventually(async () =>
        expect((await statusOf("pool.flaky")).instances[0]?.inFlight).toBe(1),
      );
      const failed = await call("pool.flaky", { fail: true });
      expect(failed.status).toBe(CallStatus.FAILURE);
      expect((await slow).output?.pid).toBe(first?.pid);
    }
    const [opened] = await records.audits.waitFor(
      (r) => r.action === AuditAction.CIRCUIT_OPENED && r.tool === "pool.flaky",
    );
    expect(opened).toMatchObject({ toolInstance: String(second?.id) });
    expect(opened?.reason).toContain(`instance ${second?.id} of tool "pool.flaky"`);
    expect(opened?.failedCalls).toHaveLength(2);
    const { status } = await eventually(async () => {
      const r = await runningNow("pool.flaky", 2);
      expect(r.up.map((i) => i.pid)).not.toContain(second?.pid);
      return r;
    }, 20_000);
    expect(status.instances.map((i) => i.startedFor)).toEqual(["warm", "replace"]);
    // The tool's own breaker never opened: its calls kept succeeding on the first instance.
    const breakers = (await stack.dispatcherClient().getRuntimeStatus({}, admin())).breakers;
    expect(breakers.find((b) => b.tool === "pool.flaky")?.breaker?.opens ?? 0).toBe(0);
    expect((await call("pool.flaky")).status).toBe(CallStatus.SUCCESS);
  });

  it("StartTool starts one more instance up to max_instances, each started for the operator", async () => {
    const start = async () =>
      (await stack.dispatcherClient().startTool({ tool: "pool.operator" }, admin())).status;
    expect((await start())?.instances.map((i) => [i.startedFor, i.state])).toEqual([
      ["operator", RuntimeState.RUNNING],
    ]);
    expect((await start())?.instances.map((i) => i.startedFor)).toEqual(["operator", "operator"]);
    // At max_instances it starts nothing more.
    expect((await start())?.instances.map((i) => i.id)).toEqual([1, 2]);
    const stopped = (await stack.dispatcherClient().stopTool({ tool: "pool.operator" }, admin()))
      .status;
    expect(stopped).toMatchObject({ state: RuntimeState.STOPPED, instances: [] });
  });

  it("keeps a tool warm only inside its warm hours", async () => {
    const { status: now } = await running("pool.now", 1);
    expect(now.minInstances).toBe(1);
    expect(now.instances[0]?.startedFor).toBe("warm");
    // Both were looked at in the same sweep of the registry: the one outside its hours has none.
    const later = await statusOf("pool.later");
    expect(later.minInstances).toBe(0);
    expect(later.instances).toEqual([]);
    expect(later.state).toBe(RuntimeState.STOPPED);
  });
});
