import { Code } from "@toolmesh/errors";
import {
  AuditAction,
  CallStatus,
  McpImportChange,
  McpOperation,
  RuntimeKind,
  TraceEventKind,
} from "@toolmesh/proto";
import {
  type CallRecords,
  collectRecords,
  type EverythingStack,
  freePort,
  startEverythingStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// An existing MCP server (the reference server-everything from the npm registry, started here)
// imported as toolmesh tools and called through the whole chain, over HTTP and over stdio.
describe("MCP servers as toolmesh tools", () => {
  let everything: EverythingStack;
  let stack: TestStack;
  let mcpUrl: string;
  let admin: string;
  let agent: string;
  let audits: CallRecords["audits"];
  let traces: CallRecords["traces"];

  beforeAll(async () => {
    everything = await startEverythingStack();
    ({ stack, url: mcpUrl } = everything);
    ({ traces, audits } = collectRecords(stack.nc));
    admin = stack.adminToken;
    agent = await stack.agentToken("mcp-agent");
    await stack.grantAll("mcp-agent");
  });

  afterAll(async () => {
    await everything?.stop();
  });

  it("imports a streamable-HTTP server's tools under a prefix, keeping schemas and annotations", async () => {
    const dispatcher = stack.dispatcherClient();
    const imported = await dispatcher.importMcpServer(
      { prefix: "everything", runtime: { url: mcpUrl }, requiredScopes: ["use:everything"] },
      stack.as(admin),
    );
    expect(imported.serverName).not.toBe("");
    const names = imported.tools.map((t) => t.tool);
    expect(names).toEqual(expect.arrayContaining(["everything.echo", "everything.get-sum"]));
    expect(imported.tools.every((t) => t.change === McpImportChange.ADDED)).toBe(true);
    const { tool } = await stack.registryClient.getTool(
      { name: "everything.echo" },
      stack.as(admin),
    );
    expect(tool?.spec?.runtime?.kind).toMatchObject({
      case: "mcp",
      value: { url: mcpUrl, tool: "echo" },
    });
    expect(tool?.spec?.inputSchema).toMatchObject({
      type: "object",
      properties: { message: { type: "string" } },
    });
    expect(tool?.spec?.requiredScopes).toEqual(["use:everything"]);
    const { runtimes } = await stack.registryClient.listRuntimes({}, stack.as(admin));
    expect(runtimes.find((r) => r.kind === RuntimeKind.MCP)?.toolCount).toBe(imported.tools.length);
  });

  it("calls an imported tool through the chain, with the records of any call", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "everything.echo", arguments: { message: "hi mcp" } }, stack.as(agent));
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(JSON.stringify(res.output)).toContain("hi mcp");
    const [record] = await audits.waitFor(
      (a) => a.callId === res.callId && a.action === AuditAction.TOOL_CALL,
    );
    expect(record).toMatchObject({
      action: AuditAction.TOOL_CALL,
      tool: "everything.echo",
      agentId: "mcp-agent",
    });
    const events = await traces.waitFor((e) => e.callId === res.callId, 3);
    expect(events.map((e) => e.kind)).toEqual([
      TraceEventKind.TOOL_EXECUTE,
      TraceEventKind.TOOL_RESULT,
      TraceEventKind.CALLBACK_SUCCESS,
    ]);
    const bad = stack
      .dispatcherClient()
      .dispatch({ tool: "everything.get-sum", arguments: { a: "one" } }, stack.as(agent));
    await expect(bad).rejects.toMatchObject({ code: Code.InvalidArgument });
    const sum = await stack
      .dispatcherClient()
      .dispatch({ tool: "everything.get-sum", arguments: { a: 2, b: 3 } }, stack.as(agent));
    expect(JSON.stringify(sum.output)).toContain("5");
  });

  it("re-syncs: unchanged tools stay, a changed definition is named and restored", async () => {
    const dispatcher = stack.dispatcherClient();
    const { tool } = await stack.registryClient.getTool(
      { name: "everything.echo" },
      stack.as(admin),
    );
    if (!tool?.spec) throw new Error("everything.echo is not registered");
    await stack.registryClient.updateTool(
      { tool: { ...tool.spec, description: "edited by hand" } },
      stack.as(admin),
    );
    const again = await dispatcher.importMcpServer(
      {
        prefix: "everything",
        runtime: { url: mcpUrl },
        requiredScopes: ["use:everything"],
        dryRun: true,
      },
      stack.as(admin),
    );
    const changed = again.tools.filter((t) => t.change !== McpImportChange.UNCHANGED);
    expect(changed.map((t) => [t.tool, t.change])).toEqual([
      ["everything.echo", McpImportChange.CHANGED],
    ]);
    const synced = await dispatcher.importMcpServer(
      { prefix: "everything", runtime: { url: mcpUrl }, requiredScopes: ["use:everything"] },
      stack.as(admin),
    );
    expect(synced.tools.find((t) => t.tool === "everything.echo")?.change).toBe(
      McpImportChange.CHANGED,
    );
    const restored = await stack.registryClient.getTool(
      { name: "everything.echo" },
      stack.as(admin),
    );
    expect(restored.tool?.spec?.description).not.toBe("edited by hand");
  });

  it("imports a stdio server started on demand and calls it", async () => {
    const imported = await stack.dispatcherClient().importMcpServer(
      {
        prefix: "local-everything",
        runtime: everything.stdio,
        // The HTTP import owns the server's resource URIs; this one takes its tools.
        only: [McpOperation.TOOL],
      },
      stack.as(admin),
    );
    expect(imported.tools.map((t) => t.tool)).toContain("local-everything.get-sum");
    const sum = await stack
      .dispatcherClient()
      .dispatch({ tool: "local-everything.get-sum", arguments: { a: 20, b: 22 } }, stack.as(agent));
    expect(sum.status).toBe(CallStatus.SUCCESS);
    expect(JSON.stringify(sum.output)).toContain("42");
  });

  it("refuses imports from non-admins and bad requests with the right codes", async () => {
    const dispatcher = stack.dispatcherClient();
    await expect(
      dispatcher.importMcpServer({ prefix: "x", runtime: { url: mcpUrl } }, stack.as(agent)),
    ).rejects.toMatchObject({ code: Code.PermissionDenied });
    await expect(
      dispatcher.importMcpServer(
        { prefix: "Bad Prefix", runtime: { url: mcpUrl } },
        stack.as(admin),
      ),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
    await expect(
      dispatcher.importMcpServer({ prefix: "x", runtime: {} }, stack.as(admin)),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
    const closedPort = await freePort();
    await expect(
      dispatcher.importMcpServer(
        { prefix: "x", runtime: { url: `http://127.0.0.1:${closedPort}/mcp` } },
        stack.as(admin),
      ),
    ).rejects.toMatchObject({ code: Code.Unavailable });
  });
});
