import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AuditAction } from "@toolmesh/proto";
import { defineTool, registerTools } from "@toolmesh/sdk";
import { Collector, eventually } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startSurfaces } from "./surfaces-fixture.js";

// MCP at /mcp in both protocol revisions, with the official SDK clients, against real processes
// (surfaces-fixture.ts): listing, calling, auth and list_changed.
describe("agent surfaces", () => {
  const s = startedForFile(startSurfaces);

  it("MCP 2026-07-28: the official SDK client lists and calls tools through the chain", async () => {
    const client = new McpClient(
      { name: "surface-test", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(s.url("/mcp")), {
        requestInit: { headers: s.bearer(s.agent) },
      }),
    );
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      "data.echo",
      "data.fail",
      "mail.send",
      "search_tools",
    ]);
    expect(tools[0]?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    expect(tools[2]?.annotations).toMatchObject({ readOnlyHint: false });
    const ok = await client.callTool({ name: "data.echo", arguments: { text: "mcp-new" } });
    expect(ok.structuredContent).toEqual({ text: "mcp-new" });
    expect(ok.content).toEqual([{ type: "text", text: '{"text":"mcp-new"}' }]);
    const bad = await client.callTool({ name: "data.echo", arguments: { text: "x", limit: 0 } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain("- /limit: must be >= 1");
    const failed = await client.callTool({ name: "data.fail", arguments: {} });
    expect(failed.isError).toBe(true);
    await client.close();
    const viaMcp = await s.recordsOf(s.byText("mcp-new"));
    const viaDispatch = await s.dispatchRecords();
    expect(viaMcp).toEqual({
      ...viaDispatch,
      audit: { ...viaDispatch.audit, arguments: { text: "mcp-new" } },
      outcome: { ...viaDispatch.outcome, output: { text: "mcp-new" } },
    });
  });

  it("MCP 2025-11-25: the @modelcontextprotocol/sdk client initializes, lists and calls", async () => {
    const client = new LegacyMcpClient({ name: "surface-legacy", version: "1.0.0" });
    await client.connect(
      new LegacyTransport(new URL(s.url("/mcp")), { requestInit: { headers: s.bearer(s.agent) } }),
    );
    expect(client.getServerVersion()?.name).toBe("toolmesh");
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(4);
    const ok = await client.callTool({ name: "data.echo", arguments: { text: "mcp-old" } });
    expect(ok.structuredContent).toEqual({ text: "mcp-old" });
    await client.close();
    expect((await s.recordsOf(s.byText("mcp-old"))).audit.action).toBe(AuditAction.TOOL_CALL);
  });

  it("MCP: 401 with resource_metadata without a token, 403 on a foreign Origin, RFC 9728 metadata", async () => {
    const init = {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    };
    const anonymous = await fetch(s.url("/mcp"), init);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain(
      `resource_metadata="${s.url("/.well-known/oauth-protected-resource/mcp")}"`,
    );
    const foreign = await fetch(s.url("/mcp"), {
      ...init,
      headers: { ...init.headers, ...s.bearer(s.agent), origin: "https://evil.example" },
    });
    expect(foreign.status).toBe(403);
    const metadata = await fetch(s.url("/.well-known/oauth-protected-resource/mcp"));
    expect(await metadata.json()).toMatchObject({
      resource: s.url("/mcp"),
      bearer_methods_supported: ["header"],
    });
  });

  // Last in this file: it adds a tool and removes it again.
  it("MCP 2026-07-28: a tool registered or removed reaches a listening client as tools/list_changed", async () => {
    const lists = new Collector<string[]>();
    const client = new McpClient(
      { name: "surface-listener", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (!error && tools) lists.push(tools.map((t) => t.name));
            },
          },
        },
      },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(s.url("/mcp")), {
        requestInit: { headers: s.bearer(s.agent) },
      }),
    );
    const added = defineTool({
      name: "data.added",
      description: "Registered while a client listens.",
      inputSchema: { type: "object" },
      handler: () => ({}),
    });
    // The listen stream opens with the connection; a change before it is open would be missed,
    // so the tool is registered again until the client has heard of it.
    await eventually(async () => {
      await registerTools([added], s.served.address, {
        url: s.stack.registry.url,
        token: s.stack.adminToken,
      });
      await lists.waitFor((names) => names.includes("data.added"), 1, 2_000);
    }, 30_000);
    await s.stack.registryClient.deregisterTool(
      { name: "data.added" },
      s.stack.as(s.stack.adminToken),
    );
    await lists.waitFor((names) => !names.includes("data.added") && names.includes("data.echo"));
    await client.close();
  });
});
