import { Code } from "@toolmesh/errors";
import { RuntimeKind, SchemaFormat } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { admin, registerCatalog, setup, spec } from "./memory-registry.js";

// ListRuntimes and ExportToolSchemas (export-handlers.ts) over the listing tests' catalog.
describe("ListTools", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(async () => {
    ctx = setup();
    await registerCatalog(ctx.client);
  });
  it("ListRuntimes counts by status", async () => {
    const { runtimes } = await ctx.client.listRuntimes({}, admin);
    const grpc = runtimes.find((r) => r.kind === RuntimeKind.GRPC);
    expect(grpc).toMatchObject({
      toolCount: 2,
      activeCount: 1,
      deprecatedCount: 1,
      disabledCount: 0,
      tools: ["data.export", "data.query"],
    });
    expect(runtimes.find((r) => r.kind === RuntimeKind.LOCAL)).toMatchObject({
      toolCount: 1,
      disabledCount: 1,
    });
  });

  it("ExportToolSchemas renders OpenAI, Anthropic and MCP definitions", async () => {
    const c = ctx.client;
    await c.updateTool({ tool: spec("data.query", { outputSchema: { type: "object" } }) }, admin);
    const openai = await c.exportToolSchemas({ format: SchemaFormat.OPENAI }, admin);
    expect(openai.tools.map((t) => [t.tool, t.exportedName])).toEqual([
      ["data.query", "data__query"],
      ["search.web", "search__web"],
    ]);
    expect(openai.tools[0]?.definition).toEqual({
      type: "function",
      function: {
        name: "data__query",
        description: "The data.query tool",
        parameters: spec("x").inputSchema,
      },
    });
    const anthropic = await c.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, names: ["data.query"] },
      admin,
    );
    expect(anthropic.tools[0]?.definition).toEqual({
      name: "data__query",
      description: "The data.query tool",
      input_schema: spec("x").inputSchema,
    });
    const mcp = await c.exportToolSchemas({ format: SchemaFormat.MCP, group: "research" }, admin);
    expect(mcp.tools.map((t) => t.exportedName)).toEqual(["search.web", "data.query"]);
    expect(mcp.tools[1]?.definition).toEqual({
      name: "data.query",
      description: "The data.query tool",
      inputSchema: spec("x").inputSchema,
      outputSchema: { type: "object" },
    });
    expect(mcp.tools[0]?.definition).not.toHaveProperty("outputSchema");
    const withDeprecated = await c.exportToolSchemas(
      { format: SchemaFormat.MCP, includeDeprecated: true },
      admin,
    );
    expect(withDeprecated.tools.map((t) => t.tool)).toEqual([
      "data.export",
      "data.query",
      "search.web",
    ]);
    await c.registerTool({ tool: spec("data__query") }, admin);
    const clash = await c.exportToolSchemas(
      { format: SchemaFormat.OPENAI, names: ["data.query", "data__query"] },
      admin,
    );
    const clashNames = clash.tools.map((t) => t.exportedName);
    expect(new Set(clashNames).size).toBe(2);
    expect(clashNames[0]).toBe("data__query");
    expect(clashNames[1]).toMatch(/^data__query_[0-9a-f]{8}$/);
    const longName = `a${".b".repeat(31)}`;
    await c.registerTool({ tool: spec(longName) }, admin);
    const long = await c.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, names: [longName] },
      admin,
    );
    expect(long.tools[0]?.exportedName).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const disabledByName = await c.exportToolSchemas(
      { format: SchemaFormat.MCP, names: ["code.run"] },
      admin,
    );
    expect(disabledByName.tools).toEqual([]);
  });

  it("ExportToolSchemas refuses a missing format, unknown names and unknown groups", async () => {
    const c = ctx.client;
    const format = await failure(c.exportToolSchemas({}, admin));
    expect(format.code).toBe(Code.InvalidArgument);
    expect(format.rawMessage).toBe(
      "format: set one of SCHEMA_FORMAT_OPENAI, SCHEMA_FORMAT_ANTHROPIC, SCHEMA_FORMAT_MCP",
    );
    const names = await failure(
      c.exportToolSchemas(
        { format: SchemaFormat.OPENAI, names: ["data.query", "nope", "data.qury"] },
        admin,
      ),
    );
    expect(names.code).toBe(Code.NotFound);
    expect(names.rawMessage).toContain('tools "nope", "data.qury" not found');
    const group = await failure(
      c.exportToolSchemas({ format: SchemaFormat.OPENAI, group: "researc" }, admin),
    );
    expect(group.code).toBe(Code.NotFound);
    expect(group.rawMessage).toBe('group "researc" not found; did you mean research?');
  });
});
