import { Code } from "@toolmesh/errors";
import { ChangeType } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { admin, setup, spec } from "./memory-registry.js";

// PutGroup, GetGroup, ListGroups and DeleteGroup (group-handlers.ts) over an in-memory store.
describe("groups", () => {
  it("keep order and example, and drive Tool.groups", async () => {
    const { client } = setup();
    for (const name of ["data.query", "data.export", "mail.send"])
      await client.registerTool({ tool: spec(name) }, admin);
    const { group } = await client.putGroup(
      {
        group: {
          name: "reporting",
          description: "Query then export",
          tools: ["data.query", "data.export"],
          example: "query, then export the rows",
        },
      },
      admin,
    );
    expect(group?.tools).toEqual(["data.query", "data.export"]);
    expect(group?.updatedAt).toBeDefined();
    expect((await client.getGroup({ name: "reporting" }, admin)).group?.example).toBe(
      "query, then export the rows",
    );
    expect((await client.getTool({ name: "data.export" }, admin)).tool?.groups).toEqual([
      "reporting",
    ]);

    await client.putGroup(
      { group: { name: "reporting", tools: ["mail.send", "data.query"] } },
      admin,
    );
    expect((await client.getTool({ name: "data.export" }, admin)).tool?.groups).toEqual([]);
    expect((await client.getTool({ name: "mail.send" }, admin)).tool?.groups).toEqual([
      "reporting",
    ]);
    const filtered = await client.listTools({ group: "reporting" }, admin);
    expect(filtered.tools.map((t) => t.spec?.name)).toEqual(["data.query", "mail.send"]);

    await client.deleteGroup({ name: "reporting" }, admin);
    expect((await client.getTool({ name: "mail.send" }, admin)).tool?.groups).toEqual([]);
    const gone = await failure(client.getGroup({ name: "reporting" }, admin));
    expect(gone.code).toBe(Code.NotFound);
  });

  it("a tool registered later sees no stale groups; deregistering removes it from groups", async () => {
    const { client, events } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.registerTool({ tool: spec("data.export") }, admin);
    await client.putGroup({ group: { name: "a", tools: ["data.query", "data.export"] } }, admin);
    await client.putGroup({ group: { name: "b", tools: ["data.query"] } }, admin);
    expect((await client.getTool({ name: "data.query" }, admin)).tool?.groups).toEqual(["a", "b"]);
    const res = await client.deregisterTool({ name: "data.query" }, admin);
    expect(res.removedFromGroups).toEqual(["a", "b"]);
    expect((await client.getGroup({ name: "a" }, admin)).group?.tools).toEqual(["data.export"]);
    expect((await client.getGroup({ name: "b" }, admin)).group?.tools).toEqual([]);
    expect(events.writes.filter((w) => w.type === ChangeType.DELETE).map((w) => w.name)).toEqual([
      "data.query",
    ]);
    const again = (await client.registerTool({ tool: spec("data.query") }, admin)).tool;
    expect(again?.groups).toEqual([]);
    expect(again?.spec?.version).toBe("2");
  });

  it("refuse unknown tools, duplicates and bad names", async () => {
    const { client, store } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const unknown = await failure(
      client.putGroup({ group: { name: "g", tools: ["data.query", "nope", "nada"] } }, admin),
    );
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.rawMessage).toBe(
      'group.tools: unknown tools "nope", "nada"; register them first',
    );
    const duplicate = await failure(
      client.putGroup({ group: { name: "g", tools: ["data.query", "data.query"] } }, admin),
    );
    expect(duplicate.rawMessage).toBe(
      'group.tools: lists "data.query" twice; each tool appears once, in usage order',
    );
    const badName = await failure(client.putGroup({ group: { name: "G!", tools: [] } }, admin));
    expect(badName.rawMessage).toContain('group.name: "G!" is not a valid name');
    const missing = await failure(client.putGroup({}, admin));
    expect(missing.rawMessage).toBe("group: is required");
    const tooMany = await failure(
      client.putGroup(
        { group: { name: "g", tools: Array.from({ length: 101 }, (_, i) => `t${i}`) } },
        admin,
      ),
    );
    expect(tooMany.rawMessage).toBe("group.tools: has 101 entries; at most 100 allowed");
    expect([...store.groups()]).toHaveLength(0);
  });

  it("DeleteGroup and DeregisterTool of unknown names are NOT_FOUND", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.putGroup({ group: { name: "reporting", tools: ["data.query"] } }, admin);
    const group = await failure(client.deleteGroup({ name: "reportin" }, admin));
    expect(group.code).toBe(Code.NotFound);
    expect(group.rawMessage).toBe('group "reportin" not found; did you mean reporting?');
    const tool = await failure(client.deregisterTool({ name: "nope" }, admin));
    expect(tool.code).toBe(Code.NotFound);
    const empty = await failure(client.deregisterTool({ name: "" }, admin));
    expect(empty.rawMessage).toBe("name: is required");
  });

  it("ListGroups pages by name", async () => {
    const { client } = setup();
    for (const name of ["c", "a", "b"])
      await client.putGroup({ group: { name, tools: [] } }, admin);
    const first = await client.listGroups({ pageSize: 2 }, admin);
    expect(first.groups.map((g) => g.name)).toEqual(["a", "b"]);
    const second = await client.listGroups({ pageSize: 2, pageToken: first.nextPageToken }, admin);
    expect(second.groups.map((g) => g.name)).toEqual(["c"]);
    expect(second.nextPageToken).toBe("");
    const bad = await failure(client.listGroups({ pageToken: "%%%" }, admin));
    expect(bad.code).toBe(Code.InvalidArgument);
  });
});
