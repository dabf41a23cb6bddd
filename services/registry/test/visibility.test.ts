import { Code } from "@toolmesh/errors";
import { SchemaFormat, ToolStatus } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { denyAll, type ToolVisibility } from "../src/visibility.js";
import { admin, agent, setup, spec, toolAgent } from "./memory-registry.js";

// Who may write and watch, and what an agent sees of the tools (visibility.ts).
describe("auth and visibility", () => {
  it("writes need admin (UpdateTool also service); WatchTools needs admin or service", async () => {
    const { client } = setup();
    const denied = await failure(client.registerTool({ tool: spec("data.query") }, agent));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.rawMessage).toBe(
      "RegisterTool needs the role admin or tool-agent; your token has the roles agent",
    );
    for (const call of [
      client.updateTool({ tool: spec("data.query") }, agent),
      client.deregisterTool({ name: "data.query" }, agent),
      client.putGroup({ group: { name: "g" } }, agent),
      client.deleteGroup({ name: "g" }, agent),
    ]) {
      expect((await failure(call)).code).toBe(Code.PermissionDenied);
    }
    const watch = await failure(
      (async () => {
        for await (const _ of client.watchTools({}, agent)) break;
      })(),
    );
    expect(watch.code).toBe(Code.PermissionDenied);
    expect((await failure(client.listTools({}))).code).toBe(Code.Unauthenticated);
  });

  it("the tool agent writes its own grpc tools and registers the tools it built only disabled", async () => {
    const { client, store } = setup();
    const local = { kind: { case: "local", value: { command: "sh" } } };
    await client.registerTool({ tool: spec("coding.write_file") }, toolAgent);
    await client.updateTool(
      { tool: spec("coding.write_file", { description: "moved" }) },
      toolAgent,
    );
    const built = await client.registerTool(
      { tool: spec("text.shout", { status: ToolStatus.DISABLED, runtime: local }) },
      toolAgent,
    );
    expect(built.tool?.spec?.status).toBe(ToolStatus.DISABLED);
    expect(built.tool?.updatedBy).toBe("toolmesh-tool-agent");
    const refusals = [
      [
        client.registerTool({ tool: spec("text.loud") }, toolAgent),
        'a tool the tool agent builds is registered with status TOOL_STATUS_DISABLED, for an operator to enable; "text.loud" asked for ACTIVE',
      ],
      [
        client.updateTool({ tool: spec("text.shout") }, toolAgent),
        'the tool agent may update only its own tools (coding.*); an admin changes "text.shout"',
      ],
      [
        client.registerTool({ tool: spec("coding.run", { runtime: local }) }, toolAgent),
        'the tool agent\'s own tools (coding.*) must have a grpc runtime; "coding.run" has local',
      ],
      [client.deregisterTool({ name: "text.shout" }, toolAgent), undefined],
      [client.putGroup({ group: { name: "g" } }, toolAgent), undefined],
    ] as const;
    for (const [call, message] of refusals) {
      const refused = await failure(call);
      expect(refused.code).toBe(Code.PermissionDenied);
      if (message) expect(refused.rawMessage).toBe(message);
    }
    expect(store.tool("text.loud")).toBeUndefined();
    expect(store.tool("text.shout")?.spec?.status).toBe(ToolStatus.DISABLED);
    // An operator enables it.
    await client.updateTool({ tool: spec("text.shout", { runtime: local }) }, admin);
    expect(store.tool("text.shout")?.spec?.status).toBe(ToolStatus.ACTIVE);
  });

  it("an agent sees nothing under deny-all, and NOT_FOUND for tools that exist", async () => {
    const { client } = setup(denyAll);
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.putGroup({ group: { name: "g", tools: ["data.query"] } }, admin);
    expect((await client.listTools({}, agent)).tools).toEqual([]);
    const get = await failure(client.getTool({ name: "data.query" }, agent));
    expect(get.code).toBe(Code.NotFound);
    expect(get.rawMessage).toBe('tool "data.query" not found; no tools are available to you');
    expect((await client.listGroups({}, agent)).groups).toEqual([]);
    expect((await failure(client.getGroup({ name: "g" }, agent))).code).toBe(Code.NotFound);
    expect((await client.exportToolSchemas({ format: SchemaFormat.OPENAI }, agent)).tools).toEqual(
      [],
    );
    const named = await failure(
      client.exportToolSchemas({ format: SchemaFormat.OPENAI, names: ["data.query"] }, agent),
    );
    expect(named.code).toBe(Code.NotFound);
    const runtimes = await client.listRuntimes({}, agent);
    expect(runtimes.runtimes.every((r) => r.toolCount === 0)).toBe(true);
  });

  it("an agent sees only the tools visibility allows, with runtime secrets redacted", async () => {
    const visibility: ToolVisibility = {
      canUse: (p, tool) => p.agentId === "agent-7" && (tool.spec?.name ?? "").startsWith("data."),
      ready: () => true,
    };
    const { client } = setup(visibility);
    await client.registerTool(
      {
        tool: spec("data.query", {
          runtime: {
            kind: {
              case: "remote",
              value: { url: "https://x.example", headers: { "x-api-key": "s3cret" } },
            },
          },
        }),
      },
      admin,
    );
    await client.registerTool({ tool: spec("mail.send") }, admin);
    await client.putGroup({ group: { name: "g", tools: ["mail.send", "data.query"] } }, admin);
    expect((await client.listTools({}, agent)).tools.map((t) => t.spec?.name)).toEqual([
      "data.query",
    ]);
    const seen = (await client.getTool({ name: "data.query" }, agent)).tool;
    const runtime = seen?.spec?.runtime?.kind;
    expect(runtime?.case === "remote" && runtime.value.headers).toEqual({
      "x-api-key": "[redacted]",
    });
    const asAdmin = (await client.getTool({ name: "data.query" }, admin)).tool?.spec?.runtime?.kind;
    expect(asAdmin?.case === "remote" && asAdmin.value.headers).toEqual({ "x-api-key": "s3cret" });
    expect((await failure(client.getTool({ name: "mail.send" }, agent))).rawMessage).toBe(
      'tool "mail.send" not found; see ListTools for the tools available to you',
    );
    expect((await client.getGroup({ name: "g" }, agent)).group?.tools).toEqual(["data.query"]);
    const exported = await client.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, group: "g" },
      agent,
    );
    expect(exported.tools.map((t) => t.tool)).toEqual(["data.query"]);
    const named = await failure(
      client.exportToolSchemas({ format: SchemaFormat.ANTHROPIC, names: ["mail.send"] }, agent),
    );
    expect(named.code).toBe(Code.NotFound);
  });

  it("an agent gets UNAVAILABLE while visibility is not ready", async () => {
    const { client } = setup({ canUse: () => true, ready: () => false });
    const error = await failure(client.listTools({}, agent));
    expect(error.code).toBe(Code.Unavailable);
    expect((await client.listTools({}, admin)).tools).toEqual([]);
  });
});
