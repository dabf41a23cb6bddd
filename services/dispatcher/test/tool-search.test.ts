import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Code } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import {
  GrantSchema,
  type Tool,
  ToolSchema,
  type ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { allowSpec, as, failure } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryToolSource } from "../src/catalog/tool-catalog.js";
import { searchTerms, ToolSearch } from "../src/catalog/tool-search.js";
import { startMemoryDispatcher } from "./memory-dispatcher.js";

type SpecFields = Omit<MessageInitShape<typeof ToolSpecSchema>, "$typeName">;
const tool = (name: string, description: string, fields: Partial<SpecFields> = {}) =>
  create(ToolSchema, {
    spec: {
      name,
      description,
      category: "",
      inputSchema: { type: "object" },
      status: ToolStatus.ACTIVE,
      ...fields,
    } as SpecFields,
  });

describe("ToolSearch", () => {
  const source = new MemoryToolSource();
  source.put(tool("mail.send", "Sends an email message to one or more recipients."));
  source.put(tool("mail.list", "Lists the messages of a mailbox folder."));
  source.put(
    tool("weather.forecast", "Forecast for a city.", {
      category: "weather",
      inputSchema: {
        type: "object",
        properties: { city: { type: "string", description: "City name or postal code" } },
      },
    }),
  );
  source.put(tool("calendar.events", "Queries events of a calendar between two dates."));
  source.put(tool("files.purge", "Deletes files.", { status: ToolStatus.DISABLED }));
  const search = new ToolSearch({ all: () => source.values() });
  const everyone = () => true;
  const names = (query: string, limit = 10, usable: (t: Tool) => boolean = everyone) =>
    search.search(query, limit, usable).map((hit) => hit.tool.spec?.name);

  it("ranks by name, description, category and schema words", () => {
    expect(names("send email")[0]).toBe("mail.send");
    expect(names("postal code")).toEqual(["weather.forecast"]);
    expect(names("weather")[0]).toBe("weather.forecast");
    expect(names("query calendar events")[0]).toBe("calendar.events");
  });

  it("puts the tool a query names exactly first, and finds nothing for unknown words", () => {
    expect(names("mail.list")[0]).toBe("mail.list");
    expect(names("zebra xylophone")).toEqual([]);
  });

  it("leaves out disabled tools and those the caller may not use, and stops at the limit", () => {
    expect(names("deletes files")).toEqual([]);
    expect(names("mail", 10, (t) => t.spec?.name !== "mail.send")).toEqual(["mail.list"]);
    expect(names("mail message", 1)).toHaveLength(1);
  });

  it("follows the snapshot: a changed or new tool is found at once", () => {
    source.put(tool("chat.post", "Posts a message to a chat channel."));
    expect(names("chat channel")).toEqual(["chat.post"]);
  });

  it("splits names and camelCase, and takes common endings off", () => {
    expect(searchTerms("data.getUserQueries of the DB")).toEqual([
      "data",
      "get",
      "user",
      "query",
      "db",
    ]);
  });
});

// SearchTools and /mcp's search_tools on the Dispatcher's real server (in-process, in-memory
// snapshots), among a thousand tools; grants that leave tools unlisted.
describe("SearchTools and search_tools among 1,000 tools", () => {
  const d = startedForFile(startMemoryDispatcher);
  const TOPICS = ["invoice", "ticket", "ledger", "shipment", "payroll", "inventory", "contract"];
  const ACTIONS = ["create", "update", "archive", "export", "approve", "list", "fetch"];
  let mcp: McpClient;

  beforeAll(async () => {
    d.reset();
    for (let i = 0; i < 1000; i++) {
      const topic = TOPICS[i % TOPICS.length];
      const action = ACTIONS[Math.floor(i / TOPICS.length) % ACTIONS.length];
      d.tools.put(
        tool(`erp.${topic}-${action}-${i}`, `${action} a ${topic} record in region ${i % 13}.`, {
          category: "erp",
          inputSchema: { type: "object", properties: { id: { type: "string" } } },
        }),
      );
    }
    d.tools.put(
      tool("weather.forecast", "Forecast of temperature and rain for a city, by the hour.", {
        category: "weather",
        runtime: { kind: { case: "remote", value: { url: "http://127.0.0.1:9/" } } },
      }),
    );
    // agent-3 may call everything, but only through an unlisted grant: tools/list stays small.
    const unlisted = { ...allowSpec("agent:agent-3", "glob:**", ["*"]), unlisted: true };
    d.grants.put(
      buckets.permission.grantKey("g-unlisted"),
      create(GrantSchema, { id: "g-unlisted", spec: unlisted }),
    );
    d.grants.put(
      buckets.permission.grantKey("g-echo"),
      create(GrantSchema, {
        id: "g-echo",
        spec: allowSpec("agent:agent-3", "tool:test.echo", ["*"]),
      }),
    );
    mcp = new McpClient(
      { name: "search-test", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${d.listening.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${await d.token("agent-3")}` } },
      }),
    );
  });

  afterAll(async () => {
    await mcp?.close();
  });

  it("SearchTools finds the one weather tool among a thousand, best match first", async () => {
    const found = await d.client.searchTools(
      { query: "rain forecast for my city", limit: 3 },
      as(d.tokens.agent),
    );
    expect(found.tools[0]?.tool?.spec?.name).toBe("weather.forecast");
    expect(found.tools.length).toBeLessThanOrEqual(3);
    const scores = found.tools.map((t) => t.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const invoices = await d.client.searchTools({ query: "export invoice" }, as(d.tokens.agent));
    expect(invoices.tools).toHaveLength(10);
    expect(invoices.tools[0]?.tool?.spec?.name).toMatch(/^erp\.invoice-export-/);
  });

  it("finds nothing a caller without grants could not call", async () => {
    const found = await d.client.searchTools({ query: "forecast" }, as(d.tokens.stranger));
    expect(found.tools).toEqual([]);
  });

  it("refuses an empty or oversized query and a limit over 50 with INVALID_ARGUMENT", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ query: "  " }, "query: say what the tool should do, such as `send an email`"],
      [
        { query: "x".repeat(501) },
        "query: is 501 characters; at most 500 allowed: use a few keywords",
      ],
      [{ query: "forecast", limit: 51 }, "limit: is 51; at most 50 allowed"],
    ];
    for (const [req, message] of cases) {
      const error = await failure(d.client.searchTools(req, as(d.tokens.agent)));
      expect(error).toMatchObject({ code: Code.InvalidArgument, rawMessage: message });
    }
  });

  it("an unlisted grant: tools/list shows search_tools and listed tools; search finds the rest, and they run", async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(["search_tools", "test.echo"]);
    expect(tools[0]?.annotations).toMatchObject({ readOnlyHint: true });
    const result = await mcp.callTool({
      name: "search_tools",
      arguments: { query: "hourly rain forecast", limit: 2 },
    });
    expect(result.isError).toBeFalsy();
    const found = (result.structuredContent as { tools: { name: string; score: number }[] }).tools;
    expect(found[0]?.name).toBe("weather.forecast");
    expect(found.length).toBeLessThanOrEqual(2);
    const ran = await mcp.callTool({ name: "test.echo", arguments: { text: "found" } });
    expect(ran.structuredContent).toMatchObject({ text: "found" });
    const bad = await mcp.callTool({ name: "search_tools", arguments: { query: "" } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain("say what the tool should do");
  });
});
