import { Code, ConnectError } from "@toolmesh/errors";
import { ChangeType, RuntimeKind, ToolStatus } from "@toolmesh/proto";
import { schemaHash } from "@toolmesh/schema";
import { failure } from "@toolmesh/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { admin, registerCatalog, setup, spec } from "./memory-registry.js";

// RegisterTool, UpdateTool, GetTool and ListTools (tool-handlers.ts) over an in-memory store.
describe("RegisterTool", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(() => {
    ctx = setup();
  });

  it("stores the spec with derived fields and announces the write", async () => {
    const { tool } = await ctx.client.registerTool({ tool: spec("data.query") }, admin);
    expect(tool?.spec?.name).toBe("data.query");
    expect(tool?.spec?.version).toBe("1");
    expect(tool?.spec?.status).toBe(ToolStatus.ACTIVE);
    expect(tool?.revision).toBe(1n);
    expect(tool?.updatedBy).toBe("ops");
    expect(tool?.schemaHash).toBe(schemaHash(spec("data.query").inputSchema, undefined));
    expect(tool?.schemaHash).toMatch(/^[0-9a-f]{64}$/);
    expect(ctx.events.writes).toMatchObject([
      { type: ChangeType.PUT, kind: "tool", name: "data.query", reason: "register tool" },
    ]);
    const { tool: read } = await ctx.client.getTool({ name: "data.query" }, admin);
    expect(read?.spec?.description).toBe("The data.query tool");
  });

  it("keeps an explicit version", async () => {
    const { tool } = await ctx.client.registerTool(
      { tool: spec("data.query", { version: "2.1.0" }) },
      admin,
    );
    expect(tool?.spec?.version).toBe("2.1.0");
  });

  it("refuses a name that exists with ALREADY_EXISTS, also when two race", async () => {
    const results = await Promise.allSettled([
      ctx.client.registerTool({ tool: spec("data.query") }, admin),
      ctx.client.registerTool({ tool: spec("data.query") }, admin),
    ]);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(1);
    const error = ConnectError.from((rejected[0] as PromiseRejectedResult).reason);
    expect(error.code).toBe(Code.AlreadyExists);
    expect(error.rawMessage).toBe(
      'tool "data.query" already exists; use UpdateTool to change it, or DeregisterTool first',
    );
    expect(ctx.events.writes).toHaveLength(1);
  });
});

describe("UpdateTool", () => {
  it("bumps version, revision and schema hash", async () => {
    const { client, events } = setup();
    const first = (await client.registerTool({ tool: spec("data.query") }, admin)).tool;
    const changed = spec("data.query", {
      inputSchema: {
        type: "object",
        properties: { q: { type: "string" }, limit: { type: "integer" } },
        required: ["q"],
      },
    });
    const second = (await client.updateTool({ tool: changed, expectedRevision: 1n }, admin)).tool;
    expect(second?.spec?.version).toBe("2");
    expect(second?.revision).toBe(2n);
    expect(second?.schemaHash).not.toBe(first?.schemaHash);
    expect(second?.createdAt).toEqual(first?.createdAt);
    const third = (await client.updateTool({ tool: changed }, admin)).tool;
    expect(third?.spec?.version).toBe("3");
    expect(third?.schemaHash).toBe(second?.schemaHash);
    expect(events.writes.map((w) => w.reason)).toEqual([
      "register tool",
      "update tool",
      "update tool",
    ]);
  });

  it("refuses a stale expected_revision with ABORTED and keeps the tool", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.updateTool({ tool: spec("data.query", { description: "v2" }) }, admin);
    const error = await failure(
      client.updateTool(
        { tool: spec("data.query", { description: "v3" }), expectedRevision: 1n },
        admin,
      ),
    );
    expect(error.code).toBe(Code.Aborted);
    expect(error.rawMessage).toBe(
      'tool "data.query" is at revision 2, not 1; GetTool, reapply your change and retry',
    );
    expect((await client.getTool({ name: "data.query" }, admin)).tool?.spec?.description).toBe(
      "v2",
    );
  });

  it("refuses an unknown tool with NOT_FOUND and a hint", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const error = await failure(client.updateTool({ tool: spec("data.querry") }, admin));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toBe('tool "data.querry" not found; did you mean data.query?');
  });

  it("validates like RegisterTool", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const error = await failure(
      client.updateTool({ tool: spec("data.query", { timeoutMs: 700_000 }) }, admin),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("tool.timeout_ms");
  });
});

describe("ListTools", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(async () => {
    ctx = setup();
    await registerCatalog(ctx.client);
  });
  const names = (res: { tools: { spec?: { name: string } }[] }) =>
    res.tools.map((t) => t.spec?.name);

  it("filters by category, keyword, runtime kind, group and status, ordered by name", async () => {
    const c = ctx.client;
    expect(names(await c.listTools({}, admin))).toEqual([
      "code.run",
      "data.export",
      "data.query",
      "search.web",
    ]);
    expect(names(await c.listTools({ category: "data" }, admin))).toEqual([
      "data.export",
      "data.query",
    ]);
    expect(names(await c.listTools({ keyword: "WAREHOUSE" }, admin))).toEqual(["data.query"]);
    expect(names(await c.listTools({ keyword: "Search.W" }, admin))).toEqual(["search.web"]);
    expect(names(await c.listTools({ runtimeKind: RuntimeKind.LOCAL }, admin))).toEqual([
      "code.run",
    ]);
    expect(names(await c.listTools({ group: "research" }, admin))).toEqual([
      "data.query",
      "search.web",
    ]);
    expect(names(await c.listTools({ status: ToolStatus.DEPRECATED }, admin))).toEqual([
      "data.export",
    ]);
    expect(
      names(await c.listTools({ category: "data", status: ToolStatus.ACTIVE }, admin)),
    ).toEqual(["data.query"]);
  });

  it("pages with opaque tokens bound to the filters", async () => {
    const c = ctx.client;
    const first = await c.listTools({ pageSize: 3 }, admin);
    expect(names(first)).toEqual(["code.run", "data.export", "data.query"]);
    expect(first.nextPageToken).not.toBe("");
    const second = await c.listTools({ pageSize: 3, pageToken: first.nextPageToken }, admin);
    expect(names(second)).toEqual(["search.web"]);
    expect(second.nextPageToken).toBe("");
    const exact = await c.listTools({ pageSize: 4 }, admin);
    expect(exact.nextPageToken).toBe("");

    const mismatched = await failure(
      c.listTools({ category: "data", pageToken: first.nextPageToken }, admin),
    );
    expect(mismatched.code).toBe(Code.InvalidArgument);
    expect(mismatched.rawMessage).toBe(
      "page_token: was issued for different filters; repeat the request with the same filters, or start again without a page_token",
    );
    const malformed = await failure(c.listTools({ pageToken: "not-a-token" }, admin));
    expect(malformed.code).toBe(Code.InvalidArgument);
    expect(malformed.rawMessage).toBe(
      "page_token: malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page",
    );
    const tooBig = await failure(c.listTools({ pageSize: 501 }, admin));
    expect(tooBig.rawMessage).toBe("page_size: is 501; at most 500 allowed");
    const badKind = await failure(c.listTools({ runtimeKind: 9 as RuntimeKind }, admin));
    expect(badKind.rawMessage).toBe("runtime_kind: 9 is not a RuntimeKind");
    const badStatus = await failure(c.listTools({ status: 9 as ToolStatus }, admin));
    expect(badStatus.rawMessage).toBe("status: 9 is not a ToolStatus");
  });

  it("GetTool NOT_FOUND lists near names; an empty name is INVALID_ARGUMENT", async () => {
    const near = await failure(ctx.client.getTool({ name: "data.qery" }, admin));
    expect(near.code).toBe(Code.NotFound);
    expect(near.rawMessage).toBe('tool "data.qery" not found; did you mean data.query?');
    const far = await failure(ctx.client.getTool({ name: "zzzzzzzzzzzz" }, admin));
    expect(far.rawMessage).toBe(
      'tool "zzzzzzzzzzzz" not found; see ListTools for the tools available to you',
    );
    const empty = await failure(ctx.client.getTool({ name: "" }, admin));
    expect(empty.rawMessage).toBe("name: is required");
  });
});
