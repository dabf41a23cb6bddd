import { clone, create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  Effect,
  GrantSpecSchema,
  PrincipalKind,
  ResourceKind,
  ToolSpecSchema,
  WatchEventType,
} from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools } from "@toolmesh/sdk";
import { eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => ConnectError.from(e),
  );

// Governance of calls against real processes: pinned definitions, grant updates, rate limits.
describe("governance", () => {
  let stack: TestStack;
  let served: ServedTools;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack();
    for (const agent of ["pinner", "granted", "flooder", "bystander"]) {
      tokens[agent] = await stack.agentToken(agent);
      if (agent !== "granted") await stack.grantAll(agent);
    }
    served = await serveTools(
      [
        defineTool({
          name: "gov.echo",
          description: "Echoes its text.",
          inputSchema: { type: "object", properties: { text: { type: "string" } } },
          handler: (args: { text?: string }) => ({ text: args.text ?? "" }),
        }),
      ],
      { registry: { url: stack.registry.url, token: stack.adminToken } },
    );
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  const admin = () => stack.as(stack.adminToken);
  const dispatch = (agent: string, toolPin = "") =>
    stack
      .dispatcherClient()
      .dispatch(
        { tool: "gov.echo", arguments: { text: "hi" }, context: { toolPin } },
        stack.as(tokens[agent] ?? ""),
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
    const grant = create(GrantSpecSchema, {
      principal: { kind: PrincipalKind.AGENT, id: "granted" },
      resource: { kind: ResourceKind.TOOL, pattern: "gov.echo" },
      scopes: ["*"],
      effect: Effect.ALLOW,
      enabled: true,
    });
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
});
