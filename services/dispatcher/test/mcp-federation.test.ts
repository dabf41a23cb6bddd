import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyMcpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Code } from "@toolmesh/errors";
import { AuditAction, CallStatus, McpImportChange, McpOperation } from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import {
  allowSpec,
  type CallRecords,
  collectRecords,
  type EverythingStack,
  startEverythingStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The prompts, resources and templates of an MCP server (the reference server-everything,
// imported over streamable HTTP and over stdio) on toolmesh's /mcp: listed as grants allow, each
// read, prompt and completion a call through the chain with its records, in both revisions with
// the official SDK clients; invisible to a caller without a grant.
describe("MCP prompts and resources, federated", () => {
  let everything: EverythingStack;
  let stack: TestStack;
  let audits: CallRecords["audits"];
  const tokens: Record<string, string> = {};
  const clients: { close(): Promise<void> }[] = [];

  const modern = async (agent: string) => {
    const client = new McpClient(
      { name: `fed-${agent}`, version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens[agent]}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  const legacy = async (agent: string) => {
    const client = new LegacyMcpClient({ name: `fed-legacy-${agent}`, version: "1.0.0" });
    await client.connect(
      new LegacyTransport(new URL(`${stack.dispatcher.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens[agent]}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  /** The end record of the call of `tool` whose arguments mention `text`. */
  const endOf = async (tool: string, text: string) =>
    (
      await audits.waitFor(
        (a) =>
          a.tool === tool &&
          a.action === AuditAction.TOOL_CALL &&
          JSON.stringify(a.output ?? {}).includes(text),
      )
    )[0];

  beforeAll(async () => {
    everything = await startEverythingStack();
    stack = everything.stack;
    ({ audits } = collectRecords(stack.nc));
    tokens.reader = await stack.agentToken("fed-reader");
    await stack.grantAll("fed-reader");
    // The outsider may call one tool of the server: none of its prompts or resources.
    tokens.outsider = await stack.agentToken("fed-outsider");
    await stack.permissionClient.grant(
      { grant: allowSpec("agent:fed-outsider", "tool:everything.echo", ["*"]) },
      stack.as(stack.adminToken),
    );
    const imported = await stack
      .dispatcherClient()
      .importMcpServer(
        { prefix: "everything", runtime: { url: everything.url } },
        stack.as(stack.adminToken),
      );
    expect(imported.tools.every((t) => t.change === McpImportChange.ADDED)).toBe(true);
    const local = everything.stdio;
    // The same server over stdio serves the same URIs: one import owns them.
    await expect(
      stack
        .dispatcherClient()
        .importMcpServer({ prefix: "local", runtime: local }, stack.as(stack.adminToken)),
    ).rejects.toMatchObject({ code: Code.AlreadyExists });
    await stack
      .dispatcherClient()
      .importMcpServer(
        { prefix: "local", runtime: local, only: [McpOperation.TOOL, McpOperation.PROMPT] },
        stack.as(stack.adminToken),
      );
  });

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await everything?.stop();
  });

  it("imports the server's prompts, resources and templates as registry entries of its runtime", async () => {
    const { tool } = await stack.registryClient.getTool(
      { name: "everything.args-prompt" },
      stack.as(stack.adminToken),
    );
    expect(tool?.spec).toMatchObject({
      category: "mcp.prompt",
      sideEffects: false,
      runtime: {
        kind: { case: "mcp", value: { tool: "args-prompt", operation: McpOperation.PROMPT } },
      },
    });
    const template = await stack.registryClient.getTool(
      { name: "everything.dynamic_text_resource" },
      stack.as(stack.adminToken),
    );
    expect(template.tool?.spec?.runtime?.kind).toMatchObject({
      case: "mcp",
      value: {
        operation: McpOperation.RESOURCE_TEMPLATE,
        tool: "demo://resource/dynamic/text/{resourceId}",
      },
    });
  });

  it("2026-07-28: prompts and resources are listed, fetched and read through the chain, with records", async () => {
    const client = await modern("reader");
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(
      expect.arrayContaining([
        "everything.args-prompt",
        "everything.simple-prompt",
        "local.args-prompt",
      ]),
    );
    const args = prompts.find((p) => p.name === "everything.args-prompt");
    expect(args?.arguments).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: "city", required: true })]),
    );
    const prompt = await client.getPrompt({
      name: "everything.args-prompt",
      arguments: { city: "Lyon-modern" },
    });
    expect(JSON.stringify(prompt.messages)).toContain("Lyon-modern");
    const end = await endOf("everything.args-prompt", "Lyon-modern");
    expect(end).toMatchObject({ status: CallStatus.SUCCESS, agentId: "fed-reader" });
    const [start] = await audits.waitFor((a) => a.callId === end?.callId && startsCall(a));
    expect(start?.arguments).toEqual({ arguments: { city: "Lyon-modern" } });

    const { resources } = await client.listResources();
    const doc = resources.find((r) => r.uri.startsWith("demo://resource/static/document/"));
    expect(doc?.name).toMatch(/^everything\./);
    const read = await client.readResource({ uri: "demo://resource/dynamic/text/7" });
    expect(read.contents[0]).toMatchObject({ uri: "demo://resource/dynamic/text/7" });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain(
      "demo://resource/dynamic/text/{resourceId}",
    );
    const [read7] = await audits.waitFor(
      (a) =>
        startsCall(a) &&
        a.tool === "everything.dynamic_text_resource" &&
        a.arguments?.uri === "demo://resource/dynamic/text/7",
    );
    const [read7End] = await audits.waitFor((a) => a.callId === read7?.callId && endsCall(a));
    expect(read7End?.status).toBe(CallStatus.SUCCESS);

    const completed = await client.complete({
      ref: { type: "ref/prompt", name: "everything.completable-prompt" },
      argument: { name: "department", value: "Eng" },
    });
    expect(completed.completion.values).toContain("Engineering");
  });

  it("2025-11-25: the same through the legacy client, and subscriptions go to the server", async () => {
    const client = await legacy("reader");
    expect(client.getServerCapabilities()).toMatchObject({
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
    });
    const prompt = await client.getPrompt({
      name: "local.args-prompt",
      arguments: { city: "Nantes-legacy" },
    });
    expect(JSON.stringify(prompt.messages)).toContain("Nantes-legacy");
    await endOf("local.args-prompt", "Nantes-legacy");
    const read = await client.readResource({ uri: "demo://resource/dynamic/text/3" });
    expect(read.contents).toHaveLength(1);
    expect(await client.subscribeResource({ uri: "demo://resource/dynamic/text/3" })).toEqual({});
    expect(await client.unsubscribeResource({ uri: "demo://resource/dynamic/text/3" })).toEqual({});
    const missing = await client
      .getPrompt({ name: "everything.args-prompt", arguments: {} })
      .catch((error: { code: number; message: string }) => error);
    expect(missing).toMatchObject({ code: -32602 });
    expect((missing as { message: string }).message).toContain("city");
  });

  it("a caller without a grant sees none of them, and is refused as if they did not exist", async () => {
    const client = await modern("outsider");
    expect((await client.listPrompts()).prompts).toEqual([]);
    expect((await client.listResources()).resources).toEqual([]);
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
    const unknown = await client
      .getPrompt({ name: "everything.no-such-prompt" })
      .catch((error: { code: number; message: string }) => error);
    const hidden = await client
      .getPrompt({ name: "everything.simple-prompt" })
      .catch((error: { code: number; message: string }) => error);
    expect(hidden).toMatchObject({ code: -32602 });
    expect((hidden as { message: string }).message).toBe(
      (unknown as { message: string }).message.replace("no-such-prompt", "simple-prompt"),
    );
    const unread = await client
      .readResource({ uri: "demo://resource/dynamic/text/9" })
      .catch((error: { code: number; data?: unknown }) => error);
    expect(unread).toMatchObject({ code: -32602, data: { uri: "demo://resource/dynamic/text/9" } });
    const refused = await audits.waitFor(
      (a) =>
        a.action === AuditAction.TOOL_REFUSED &&
        a.agentId === "fed-outsider" &&
        a.tool === "everything.simple-prompt",
    );
    expect(refused[0]?.errorCode).toBe("PERMISSION_DENIED");
  });
});
