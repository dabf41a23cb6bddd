import { randomUUID } from "node:crypto";
import { clone, create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  type RateLimitSpecSchema,
  RateLimitSubject,
  RetryInfoSchema,
  ToolSpecSchema,
  WatchEventType,
} from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  allowSpec,
  echoTool,
  eventually,
  failure,
  serveOnStack,
  startStack,
  type TestStack,
  watchLog,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Governance of calls against real processes: pinned definitions, grant updates, rate limits.
describe("governance", () => {
  let stack: TestStack;
  let served: ServedTools;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack();
    for (const agent of ["pinner", "granted", "flooder", "bystander", "probe", "daily"]) {
      tokens[agent] = await stack.agentToken(agent);
      if (agent !== "granted") await stack.grantAll(agent);
    }
    served = await serveOnStack(stack, [echoTool("gov.echo")]);
    // The Dispatcher follows the buckets asynchronously; the suite starts once it serves a call.
    await eventually(() => dispatch("bystander"));
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  const admin = () => stack.as(stack.adminToken);
  const dispatch = (agent: string, toolPin = "", callId = "") =>
    stack
      .dispatcherClient()
      .dispatch(
        { tool: "gov.echo", arguments: { text: "hi" }, context: { toolPin, callId } },
        stack.as(tokens[agent] ?? ""),
      );

  /**
   * Puts rate limits, then waits until the Dispatcher applies them: a probe limit written last
   * (one call a day for agent "probe") refuses the probe only once every limit before it is seen.
   */
  async function putLimits(...limits: MessageInitShape<typeof RateLimitSpecSchema>[]) {
    for (const limit of [
      ...limits,
      { subject: RateLimitSubject.AGENT, target: "probe", callsPerDay: 1 },
    ])
      await stack.permissionClient.putRateLimit({ limit }, admin());
    await eventually(async () => {
      const error = await failure(dispatch("probe"));
      expect(error.code).toBe(Code.ResourceExhausted);
    });
    await stack.permissionClient.deleteRateLimit({ id: "agent.probe" }, admin());
  }

  /** Settles every call, as outcomes: the reply or the error. */
  const settle = (calls: Promise<unknown>[]) =>
    Promise.all(
      calls.map((c) =>
        c.then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        ),
      ),
    );

  it("runs a pinned call until the tool changes, then refuses it naming the change", async () => {
    const before = (await stack.registryClient.getTool({ name: "gov.echo" }, admin())).tool;
    const pin = before?.definitionHash ?? "";
    expect(pin).toMatch(/^[0-9a-f]{64}$/);
    expect((await dispatch("pinner", pin)).output).toEqual({ text: "hi" });

    const abort = new AbortController();
    const watch = stack.registryClient
      .watchTools({}, { ...admin(), signal: abort.signal })
      [Symbol.asyncIterator]();
    while ((await watch.next()).value.type !== WatchEventType.SNAPSHOT_END);

    const spec = clone(ToolSpecSchema, before?.spec ?? create(ToolSpecSchema));
    spec.description = "Echoes its text, and now also logs it somewhere.";
    const updated = (await stack.registryClient.updateTool({ tool: spec }, admin())).tool;
    const event = (await watch.next()).value;
    abort.abort();
    expect(event).toMatchObject({ type: WatchEventType.PUT, name: "gov.echo" });
    expect(event.changed).toEqual(["description"]);
    expect(updated?.history.map((d) => d.changed)).toEqual([[], ["description"]]);

    const refused = await eventually(async () => {
      const error = await failure(dispatch("pinner", pin));
      expect(error.code).toBe(Code.FailedPrecondition);
      return error;
    });
    expect(refused.rawMessage).toContain('tool "gov.echo" is not the definition you pinned');
    expect(refused.rawMessage).toContain(
      `its description changed since version ${before?.spec?.version}`,
    );
    // Unpinned, pinned to the new definition, or pinned to the (unchanged) schemas: it runs.
    expect((await dispatch("pinner")).output).toEqual({ text: "hi" });
    expect((await dispatch("pinner", updated?.definitionHash)).output).toEqual({ text: "hi" });
    expect((await dispatch("pinner", before?.schemaHash)).output).toEqual({ text: "hi" });

    const malformed = await failure(dispatch("pinner", "not-a-hash"));
    expect(malformed.code).toBe(Code.InvalidArgument);
    expect(malformed.rawMessage).toContain("context.tool_pin");
  });

  it("a schema change breaks a schema pin too, naming the schema", async () => {
    const before = (await stack.registryClient.getTool({ name: "gov.echo" }, admin())).tool;
    const spec = clone(ToolSpecSchema, before?.spec ?? create(ToolSpecSchema));
    spec.inputSchema = {
      type: "object",
      properties: { text: { type: "string", maxLength: 100 } },
    };
    await stack.registryClient.updateTool({ tool: spec }, admin());
    const refused = await eventually(async () => {
      const error = await failure(dispatch("pinner", before?.schemaHash));
      expect(error.code).toBe(Code.FailedPrecondition);
      return error;
    });
    expect(refused.rawMessage).toContain("its schema changed since");
  });

  it("sees an UpdateGrant within a second", async () => {
    const grant = allowSpec("agent:granted", "tool:gov.echo", ["*"]);
    const created = (await stack.permissionClient.grant({ grant }, admin())).grant;
    await eventually(async () =>
      expect((await dispatch("granted")).output).toEqual({ text: "hi" }),
    );
    await stack.permissionClient.updateGrant(
      { grantId: created?.id ?? "", grant: { ...grant, enabled: false }, expectedRevision: 1n },
      admin(),
    );
    const denied = await eventually(
      async () => {
        const error = await failure(dispatch("granted"));
        expect(error.code).toBe(Code.PermissionDenied);
        return error;
      },
      1000,
      "the Dispatcher refusing after the grant was disabled",
    );
    expect(denied.rawMessage).toContain("gov.echo");
  });

  it("refuses a flood above a rate limit with RetryInfo, records it, and leaves another agent alone", async () => {
    // A burst of 3 that refills once in 1000 s: exactly three calls of the flood pass.
    await putLimits({
      subject: RateLimitSubject.AGENT,
      target: "flooder",
      requestsPerSecond: 0.001,
      burst: 3,
    });
    const audited = new Map<string, string>();
    const log = watchLog(stack.nc);
    const ids = Array.from({ length: 20 }, () => `flood-${randomUUID()}`);
    const [flood, others] = await Promise.all([
      settle(ids.map((id) => dispatch("flooder", "", id))),
      settle(Array.from({ length: 20 }, () => dispatch("bystander"))),
    ]);
    expect(others.filter((e) => e !== undefined)).toEqual([]);
    expect(flood.filter((e) => e === undefined)).toHaveLength(3);
    const refused = flood.filter((e): e is ConnectError => e !== undefined);
    expect(refused).toHaveLength(17);
    for (const error of refused) {
      expect(error.code).toBe(Code.ResourceExhausted);
      expect(error.rawMessage).toContain("rate limit agent.flooder allows no more calls now");
      const retry = error.findDetails(RetryInfoSchema)[0];
      expect(Number(retry?.retryDelay?.seconds ?? 0n)).toBeGreaterThan(0);
    }
    const refusals = await log.records.waitFor(
      (r) => ids.includes(r.callId) && r.reason.includes("over rate limit"),
      17,
    );
    for (const record of refusals) audited.set(record.callId, record.reason);
    log.stop();
    expect(
      [...audited.values()].filter((r) => r === "over rate limit agent.flooder (rate)"),
    ).toHaveLength(17);
  });

  it("enforces a daily quota with a retry delay until the next UTC day", async () => {
    await putLimits({ subject: RateLimitSubject.AGENT, target: "daily", callsPerDay: 2 });
    const outcomes = await settle([dispatch("daily"), dispatch("daily"), dispatch("daily")]);
    expect(outcomes.filter((e) => e === undefined)).toHaveLength(2);
    const over = outcomes.find((e): e is ConnectError => e !== undefined);
    expect(over?.code).toBe(Code.ResourceExhausted);
    expect(over?.rawMessage).toContain("its daily quota of 2 calls");
    const delay = Number(over?.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds ?? -1n);
    expect(delay).toBeGreaterThanOrEqual(0);
    expect(delay).toBeLessThanOrEqual(24 * 60 * 60);
    // Removing the limit lets the agent call again.
    await stack.permissionClient.deleteRateLimit({ id: "agent.daily" }, admin());
    await eventually(async () => expect((await dispatch("daily")).output).toEqual({ text: "hi" }));
  });
});
