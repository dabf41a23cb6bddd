import { randomUUID } from "node:crypto";
import { clone, create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { Code } from "@toolmesh/errors";
import {
  type CallbackService,
  CallStatus,
  RetryInfoSchema,
  RuntimeSchema,
  ToolSpecSchema,
} from "@toolmesh/proto";
import { defineTool, type ServedTools } from "@toolmesh/sdk";
import {
  chainServices,
  eventually,
  failure,
  mintJwt,
  type ServiceProcess,
  serveOnStack,
  startStack,
  type TestStack,
  watchLog,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Resident set size of a process, from /proc (Linux). */
async function rssMiB(pid: number | undefined): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

// Hostile input against real processes: each test fails on a main without the protection.
describe("hostile input", () => {
  let stack: TestStack;
  let callback: ServiceProcess;
  let callbackClient: Client<typeof CallbackService>;
  /** Call ids that reached the backend, and the gate held calls wait at. */
  const reached = new Set<string>();
  let release: () => void = () => {};
  const holding = new Promise<void>((resolve) => {
    release = resolve;
  });
  let served: ServedTools;
  let alice: string;
  let mallory: string;
  const rssBefore: Record<string, number> = {};
  const processes = () => ({
    registry: stack.service("registry"),
    permission: stack.service("permission"),
    dispatcher: stack.service("dispatcher"),
    callback,
  });

  beforeAll(async () => {
    stack = await startStack({ services: [...chainServices, "callback"] });
    callback = stack.service("callback");
    callbackClient = stack.callbackClient();
    alice = await stack.agentToken("alice");
    mallory = await stack.agentToken("mallory");
    await stack.grantAll("alice");
    await stack.grantAll("mallory");
    served = await serveOnStack(stack, [
      defineTool({
        name: "hostile.echo",
        description: "Echoes its arguments.",
        inputSchema: { type: "object" },
        handler: async (args: Record<string, unknown>, ctx) => {
          reached.add(ctx.callId);
          // A call asked to hold stays running until the test lets it go.
          if (args.hold === true) await holding;
          return { keys: Object.keys(args) };
        },
      }),
      defineTool({
        name: "hostile.pattern",
        description: "Takes a string matched by a backtracking pattern.",
        inputSchema: {
          type: "object",
          properties: { s: { type: "string", pattern: "^(a+)+$" } },
        },
        handler: () => ({ ok: true }),
      }),
    ]);
    for (const [name, p] of Object.entries(processes()))
      rssBefore[name] = await rssMiB(p.child.pid);
  }, 120_000);

  afterAll(async () => {
    const after: Record<string, number> = {};
    for (const [name, p] of Object.entries(processes())) after[name] = await rssMiB(p.child.pid);
    // The figure the report quotes: RSS (MiB) of each service before and after this suite.
    console.log(
      `hostile-input RSS MiB before ${JSON.stringify(rssBefore)} after ${JSON.stringify(after)}`,
    );
    release();
    await served?.close();
    await callback?.stop();
    await stack?.stop();
  });

  const dispatch = (token: string, tool: string, args: object, callId = "") =>
    stack.dispatcherClient().dispatch(
      {
        tool,
        arguments: args as never,
        context: { callId, traceId: "", parentId: "", idempotencyKey: "" },
      },
      stack.as(token),
    );

  it("a service key cannot rewrite a tool's runtime, only store slugs through SetToolSlugs", async () => {
    const service = await mintJwt(stack.jwtSecret, {
      sub: "knowhub-sync",
      roles: ["service", "knowhub"],
    });
    const before = (await stack.registryClient.getTool({ name: "hostile.echo" }, stack.as(service)))
      .tool;
    const spec = clone(ToolSpecSchema, before?.spec ?? create(ToolSpecSchema));
    spec.runtime = create(RuntimeSchema, {
      kind: { case: "local", value: { command: "sh", args: ["-c", "id"] } },
    });
    const denied = await failure(
      stack.registryClient.updateTool({ tool: spec }, stack.as(service)),
    );
    expect(denied.code).toBe(Code.PermissionDenied);
    const after = (await stack.registryClient.getTool({ name: "hostile.echo" }, stack.as(service)))
      .tool;
    expect(after?.revision).toBe(before?.revision);
    expect(after?.spec?.runtime?.kind.case).toBe("grpc");
    const stored = await stack.registryClient.setToolSlugs(
      { name: "hostile.echo", knowhubSlugs: ["echo-guide"], expectedRevision: 0n },
      stack.as(service),
    );
    expect(stored.tool?.spec?.knowhubSlugs).toEqual(["echo-guide"]);
    expect(stored.tool?.spec?.runtime?.kind.case).toBe("grpc");
    // An agent may not store slugs either.
    expect(
      (
        await failure(
          stack.registryClient.setToolSlugs(
            { name: "hostile.echo", knowhubSlugs: [] },
            stack.as(alice),
          ),
        )
      ).code,
    ).toBe(Code.PermissionDenied);
  });

  it("a call id belongs to the agent that used it first: reuse is ALREADY_EXISTS and changes nothing", async () => {
    const callId = `alice-${randomUUID()}`;
    const first = await dispatch(alice, "hostile.echo", { x: 1 }, callId);
    expect(first.status).toBe(CallStatus.SUCCESS);
    const stolen = await failure(dispatch(mallory, "hostile.echo", { y: 2 }, callId));
    expect(stolen.code).toBe(Code.AlreadyExists);
    expect(stolen.rawMessage).toContain("belongs to another agent");
    // Alice still owns her outcome; the callback service shows it to her, not to mallory.
    const outcome = await eventuallyOutcome(callId, alice);
    expect(outcome.agentId).toBe("alice");
    expect(outcome.output).toEqual({ keys: ["x"] });
    expect((await failure(callbackClient.getOutcome({ callId }, stack.as(mallory)))).code).toBe(
      Code.PermissionDenied,
    );
    // Alice may use her own id again (the idempotent path is hers).
    expect((await dispatch(alice, "hostile.echo", { x: 3 }, callId)).status).toBe(
      CallStatus.SUCCESS,
    );
  });

  it("a call id another agent chose first cannot be taken over, even before that call ends", async () => {
    const callId = `pending-${randomUUID()}`;
    // Mallory cannot pre-empt alice's next id, nor alice mallory's: whoever is first keeps it.
    const running = dispatch(mallory, "hostile.echo", { hold: true }, callId);
    await eventually(async () => expect(reached.has(callId)).toBe(true));
    const second = await failure(dispatch(alice, "hostile.echo", { z: 2 }, callId));
    expect(second.code).toBe(Code.AlreadyExists);
    release();
    expect((await running).status).toBe(CallStatus.SUCCESS);
    expect((await eventuallyOutcome(callId, mallory)).agentId).toBe("mallory");
  });

  it("the audit record keeps every argument key the backend received, __proto__ included, with secrets redacted", async () => {
    const log = watchLog(stack.nc);
    const callId = `proto-${randomUUID()}`;
    const args = JSON.parse(
      '{"__proto__": {"polluted": true}, "Authorization": "Basic abc", "headers": {"Cookie": "sid=1"}, "note": "plain"}',
    );
    const reply = await dispatch(alice, "hostile.echo", args, callId);
    expect(reply.output).toEqual({
      keys: ["__proto__", "Authorization", "headers", "note"],
    });
    // The record that holds the call's arguments: its start, or the one record of start and end.
    const [record] = await log.records.waitFor(
      (r) => r.callId === callId && r.arguments !== undefined,
    );
    log.stop();
    const stored = record?.arguments as Record<string, unknown>;
    expect(Object.keys(stored)).toEqual(["__proto__", "Authorization", "headers", "note"]);
    expect(JSON.stringify(stored)).toBe(
      '{"__proto__":{"polluted":true},"Authorization":"[redacted]","headers":{"Cookie":"[redacted]"},"note":"plain"}',
    );
  });

  it("a flood of bad tokens from one source is throttled while a valid caller keeps being served", async () => {
    // The valid caller was served before the flood, as a running agent is; a token never seen
    // before, from an address under throttle, waits like the attacker (docs/security.md).
    expect(
      (await stack.registryClient.listTools({}, stack.as(alice))).tools.length,
    ).toBeGreaterThan(0);
    const bad = await mintJwt("x".repeat(64), { sub: "attacker", roles: ["admin"] });
    const outcomes = { unauthenticated: 0, throttled: 0, validOk: 0 };
    let retryInfo = false;
    const badCall = async () => {
      const e = await failure(stack.registryClient.listTools({}, stack.as(bad)));
      if (e.code === Code.Unauthenticated) outcomes.unauthenticated++;
      if (e.code === Code.ResourceExhausted) {
        outcomes.throttled++;
        retryInfo ||= e.findDetails(RetryInfoSchema).length > 0;
      }
    };
    const validCall = async () => {
      const r = await stack.registryClient.listTools({}, stack.as(alice));
      if (r.tools.length > 0) outcomes.validOk++;
    };
    // A sustained flood: ten waves of 20 bad requests, each alongside 5 valid ones.
    for (let wave = 0; wave < 10; wave++)
      await Promise.all([
        ...Array.from({ length: 20 }, badCall),
        ...Array.from({ length: 5 }, validCall),
      ]);
    expect(outcomes.validOk).toBe(50);
    expect(outcomes.throttled).toBeGreaterThan(0);
    expect(outcomes.unauthenticated + outcomes.throttled).toBe(200);
    expect(retryInfo).toBe(true);
    // Failures are logged with who tried and from where, never the token.
    const logged = stack
      .service("registry")
      .stdout.lines.filter((l) => l.includes("authentication failed"));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.length).toBeLessThan(10);
    expect(JSON.parse(logged[0] as string)).toMatchObject({ jwt_sub: "attacker" });
    expect(logged.join("\n")).not.toContain(bad);
  });

  it("a backtracking pattern cannot stall the dispatcher: bystanders are served while it is refused", async () => {
    const hostile = dispatch(alice, "hostile.pattern", { s: `${"a".repeat(40)}!` });
    const bystanders = Array.from({ length: 20 }, () =>
      dispatch(mallory, "hostile.echo", { b: 1 }),
    );
    const refused = await failure(hostile);
    expect(refused.code).toBe(Code.InvalidArgument);
    const served = await Promise.all(bystanders);
    expect(served.every((r) => r.status === CallStatus.SUCCESS)).toBe(true);
    // The pattern still does its job on good input.
    expect((await dispatch(alice, "hostile.pattern", { s: "aaaa" })).status).toBe(
      CallStatus.SUCCESS,
    );
  });

  it("a 10 KB tool name is INVALID_ARGUMENT naming the limit, and bystanders are unaffected", async () => {
    const name = "a".repeat(10 * 1024);
    const hostile = failure(dispatch(alice, name, {}));
    const bystanders = Array.from({ length: 20 }, () => dispatch(mallory, "hostile.echo", {}));
    const refused = await hostile;
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.rawMessage).toContain("at most 64 allowed");
    expect((await Promise.all(bystanders)).every((r) => r.status === CallStatus.SUCCESS)).toBe(
      true,
    );
    for (const call of [
      () => stack.registryClient.getTool({ name }, stack.as(alice)),
      () => stack.registryClient.deregisterTool({ name }, stack.as(stack.adminToken)),
      () => callbackClient.getOutcome({ callId: name }, stack.as(alice)),
      () =>
        stack.dispatcherClient().dispatch(
          {
            tool: "hostile.echo",
            context: { callId: name, traceId: "", parentId: "", idempotencyKey: "" },
          },
          stack.as(alice),
        ),
    ])
      expect((await failure(call())).code).toBe(Code.InvalidArgument);
    // A JWT whose sub is 10 KB is refused before it names a subject.
    const longSub = await mintJwt(stack.jwtSecret, { sub: "s".repeat(5000) });
    expect((await failure(dispatch(longSub, "hostile.echo", {}))).code).toBe(Code.Unauthenticated);
  });

  /** The outcome the callback service holds, once its consumer has stored it. */
  const eventuallyOutcome = (callId: string, token: string) =>
    eventually(async () => {
      const res = await callbackClient.getOutcome({ callId }, stack.as(token));
      if (!res.event) throw new Error("no event yet");
      return res.event;
    });
});
