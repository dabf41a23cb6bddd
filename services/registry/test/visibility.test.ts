import { Code } from "@toolmesh/errors";
import { SchemaFormat } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { denyAll, type ToolVisibility } from "../src/visibility.js";
import { admin, agent, setup, spec } from "./memory-registry.js";

// Who may write and watch, and what an agent sees of the tools (visibility.ts).
describe("auth and visibility", () => {
  it("writes need admin (UpdateTool also service); WatchTools needs admin or service", async () => {
    const { client } = setup();
    const denied = await failure(client.registerTool({ tool: spec("data.query") }, agent));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.rawMessage).toBe(
      "RegisterTool needs the role admin; your token has the roles agent",
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
