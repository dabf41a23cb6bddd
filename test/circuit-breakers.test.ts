import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import {
  AuditAction,
  CallStatus,
  CircuitBreakerSchema,
  CircuitOpenSchema,
  CircuitState,
  RetryInfoSchema,
  ToolSpecSchema,
} from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools, ToolError, toolSpec } from "@toolmesh/sdk";
import {
  eventually,
  failure,
  localHttpRuntime,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const OPEN_MS = 1500;

// Self-repair against real processes: a tool whose calls keep failing opens its circuit breaker,
// which fails calls fast with UNAVAILABLE and when to retry, records the opening with the failed
// calls, shows in runtime status and metrics, and closes after a successful probe; a local tool
// whose breaker opens is restarted.
describe("circuit breakers", () => {
  let stack: TestStack;
  let served: ServedTools;
  let token: string;
  const state = { fail: true, runs: 0 };
  const admin = () => stack.as(stack.adminToken);
  const call = (tool: string, args: JsonObject = {}) =>
    stack.dispatcherClient().dispatch({ tool, arguments: args }, stack.as(token));

  const register = (spec: MessageInitShape<typeof ToolSpecSchema>) =>
    stack.registryClient.registerTool({ tool: create(ToolSpecSchema, spec) }, admin());

  beforeAll(async () => {
    stack = await startStack();
    token = await stack.agentToken("breaker-bot");
    await stack.grantAll("breaker-bot");
    const flaky = defineTool({
      name: "flaky.svc",
      description: "Fails while told to.",
      inputSchema: { type: "object" },
      handler: () => {
        state.runs++;
        if (state.fail) throw new ToolError("upstream_down", "the upstream is down");
        return { ok: true };
      },
    });
    served = await serveTools([flaky], { port: 0 });
    const spec = toolSpec(flaky, served.address);
    spec.circuitBreaker = create(CircuitBreakerSchema, { failures: 3, openMs: OPEN_MS });
    await register(spec);
    await register({
      name: "flaky.local",
      description: "A local HTTP tool that fails when asked to.",
      inputSchema: { type: "object" },
      circuitBreaker: { failures: 2, openMs: OPEN_MS },
      runtime: localHttpRuntime(),
    });
    await eventually(async () =>
      expect((await call("flaky.local")).status).toBe(CallStatus.SUCCESS),
    );
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  const breakerOf = async (tool: string) =>
    (await stack.dispatcherClient().getRuntimeStatus({}, admin())).breakers.find(
      (b) => b.tool === tool,
    )?.breaker;
  const metrics = async () => (await fetch(`${stack.service("dispatcher").url}/metrics`)).text();

  it("opens after the configured failures, fails fast, records it, and a probe closes it", async () => {
    const failed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call("flaky.svc");
      expect(r.status).toBe(CallStatus.FAILURE);
      failed.push(r.callId);
    }
    expect(state.runs).toBe(3);

    const refused = await failure(call("flaky.svc"));
    expect(refused.code).toBe(Code.Unavailable);
    expect(state.runs).toBe(3);
    const [detail] = refused.findDetails(CircuitOpenSchema);
    expect(detail).toMatchObject({ tool: "flaky.svc", failures: 3 });
    expect(detail?.lastError).toContain("upstream_down");
    const retryAt = detail?.retryAt ? timestampMs(detail.retryAt) : 0;
    expect(retryAt).toBeGreaterThan(Date.now());
    expect(retryAt).toBeLessThanOrEqual(Date.now() + OPEN_MS);
    expect(refused.findDetails(RetryInfoSchema)).toHaveLength(1);
    expect(refused.rawMessage).toContain("circuit breaker is open");

    expect(await breakerOf("flaky.svc")).toMatchObject({
      state: CircuitState.OPEN,
      consecutiveFailures: 3,
      opens: 1,
      failedCalls: failed,
    });
    expect(await metrics()).toMatch(/toolmesh_dispatcher_circuit_state\{tool="flaky\.svc"\} 1\b/);
    expect(await metrics()).toMatch(
      /toolmesh_dispatcher_circuit_opens_total\{tool="flaky\.svc",scope="tool"\} 1\b/,
    );

    // The opening is an audit record of its own, naming the calls that failed; the fast refusal
    // is recorded like any refusal.
    const records = await eventually(async () => {
      const { records } = await stack
        .auditClient()
        .queryRecords({ tool: "flaky.svc", pageSize: 1000 }, admin());
      expect(records.some((r) => r.action === AuditAction.CIRCUIT_OPENED)).toBe(true);
      expect(records.some((r) => r.status === CallStatus.REFUSED)).toBe(true);
      return records;
    });
    const opened = records.find((r) => r.action === AuditAction.CIRCUIT_OPENED);
    expect(opened?.failedCalls).toEqual(failed);
    expect(opened?.errorCode).toBe("upstream_down");
    expect(opened?.reason).toContain("opened after 3 failures in a row");
    expect(records.find((r) => r.status === CallStatus.REFUSED)?.reason).toMatch(/^circuit open/);

    // Past open_ms one probe goes through; its success closes the breaker.
    state.fail = false;
    await eventually(async () => expect((await call("flaky.svc")).status).toBe(CallStatus.SUCCESS));
    expect(await breakerOf("flaky.svc")).toMatchObject({
      state: CircuitState.CLOSED,
      consecutiveFailures: 0,
      opens: 1,
    });
    expect(await metrics()).toMatch(/toolmesh_dispatcher_circuit_state\{tool="flaky\.svc"\} 0\b/);
  });

  it("reopens at once when the probe fails", async () => {
    state.fail = true;
    for (let i = 0; i < 3; i++) await call("flaky.svc");
    expect((await failure(call("flaky.svc"))).code).toBe(Code.Unavailable);
    const runs = state.runs;
    // The probe fails: open again, for another open_ms.
    await eventually(async () => {
      const r = await call("flaky.svc");
      expect(r.status).toBe(CallStatus.FAILURE);
    });
    expect(state.runs).toBe(runs + 1);
    expect((await failure(call("flaky.svc"))).code).toBe(Code.Unavailable);
    expect((await breakerOf("flaky.svc"))?.opens).toBe(3);
  });

  it("restarts a local tool whose breaker opens", async () => {
    const before = (await call("flaky.local")).output?.pid;
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++)
      expect((await call("flaky.local", { fail: true })).status).toBe(CallStatus.FAILURE);
    expect((await failure(call("flaky.local"))).code).toBe(Code.Unavailable);
    // Stopped when its breaker opened; the probe starts a fresh process, and closes the breaker.
    await eventually(async () => {
      const status = await stack
        .dispatcherClient()
        .getRuntimeStatus({ tool: "flaky.local" }, admin());
      expect(status.runtimes[0]?.pid ?? 0).toBe(0);
    });
    const probe = await eventually(async () => {
      const r = await call("flaky.local");
      expect(r.status).toBe(CallStatus.SUCCESS);
      return r;
    });
    expect(probe.output?.pid).not.toBe(before);
    expect((await breakerOf("flaky.local"))?.state).toBe(CircuitState.CLOSED);
  });

  it("closes a breaker when an operator starts the tool", async () => {
    for (let i = 0; i < 2; i++)
      expect((await call("flaky.local", { fail: true })).status).toBe(CallStatus.FAILURE);
    expect((await failure(call("flaky.local"))).code).toBe(Code.Unavailable);
    await stack.dispatcherClient().startTool({ tool: "flaky.local" }, admin());
    expect((await breakerOf("flaky.local"))?.state).toBe(CircuitState.CLOSED);
    expect((await call("flaky.local")).status).toBe(CallStatus.SUCCESS);
  });
});
