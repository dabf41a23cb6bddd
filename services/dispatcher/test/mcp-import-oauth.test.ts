import { Code } from "@toolmesh/errors";
import { CallStatus, McpImportChange } from "@toolmesh/proto";
import {
  allowSpec,
  connectAs,
  type EverythingStack,
  eventually,
  failure,
  type ProtectedMcp,
  startEverythingStack,
  startOAuthServer,
  startProtectedMcp,
  type TestOAuthServer,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SCOPES = ["openid", "offline_access", "tools"];

// An MCP server protected by OAuth as the MCP authorization spec has it (401 with
// protected-resource metadata, RFC 9728; a real authorization server, oidc-provider): its import
// discovers the authorization server, registers toolmesh as its client (RFC 7591) and imports the
// tools once the importing user has connected; each user then calls with their own token. An
// authorization server without registration is refused saying what to register by hand.
describe("importing an MCP server protected by OAuth", () => {
  let stack: TestStack;
  let everything: EverythingStack;
  let as: TestOAuthServer;
  let closed: TestOAuthServer;
  let mcp: ProtectedMcp;
  let mcpClosed: ProtectedMcp;
  let redirectUri = "";
  const admin = () => stack.as(stack.adminToken);

  /** An admin acting for `user`: the import lists the server's tools with that user's account. */
  const adminFor = async (user: string) =>
    stack.as(await stack.agentToken("ops", { roles: ["admin"], onBehalfOf: user }));
  const importAs = async (prefix: string, url: string, user: string) =>
    stack.dispatcherClient().importMcpServer({ prefix, runtime: { url } }, await adminFor(user));
  const call = async (tool: string, user: string) =>
    stack
      .dispatcherClient()
      .dispatch(
        { tool, arguments: { message: `hi from ${user}` } },
        stack.as(await stack.agentToken("bot", { onBehalfOf: user })),
      );

  beforeAll(async () => {
    everything = await startEverythingStack();
    const { url: mcpUrl, permissionUrl } = everything;
    stack = everything.stack;
    redirectUri = `${permissionUrl}/oauth/callback`;
    mcp = await startProtectedMcp(mcpUrl, () => as.issuer, SCOPES);
    mcpClosed = await startProtectedMcp(mcpUrl, () => closed.issuer, SCOPES);
    as = await startOAuthServer({
      redirectUri,
      resource: mcp.url,
      accessTokenTtlS: 300,
      registration: true,
    });
    closed = await startOAuthServer({ redirectUri, resource: mcpClosed.url, accessTokenTtlS: 300 });
    await stack.grantAll("bot");
    await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin());
  }, 90_000);

  afterAll(async () => {
    await everything?.stop();
    await mcp?.stop();
    await mcpClosed?.stop();
    await as?.stop();
    await closed?.stop();
  });

  it("registers the server's authorization server as a provider, toolmesh its registered client, and asks the importing user to connect", async () => {
    const refused = await failure(importAs("everything", mcp.url, "alice"));
    expect(refused.code).toBe(Code.FailedPrecondition);
    expect(refused.rawMessage).toContain(
      'user "alice" has not connected an account of OAuth provider "everything"',
    );
    const { providers } = await stack.permissionClient.listOAuthProviders({}, admin());
    const provider = providers.find((p) => p.spec?.name === "everything");
    expect(provider?.spec).toMatchObject({
      issuer: as.issuer,
      resource: mcp.url,
      scopes: SCOPES,
      tokenEndpoint: `${as.issuer}/token`,
    });
    // A client of its own, registered dynamically, with a secret kept in the vault.
    expect(provider?.spec?.clientId).not.toBe("");
    expect(provider?.spec?.clientId).not.toBe(as.clientId);
    expect(provider?.hasClientSecret).toBe(true);
    expect(provider?.redirectUri).toBe(redirectUri);
    expect(mcp.seen).toEqual([]);

    const link = /open (\S+) to connect it/.exec(refused.rawMessage)?.[1] ?? "";
    expect((await connectAs(link, "alice")).text).toContain(
      "is connected to toolmesh for user alice",
    );
  });

  it("imports the tools with the user's token once connected; each user calls with their own", async () => {
    const imported = await eventually(
      () => importAs("everything", mcp.url, "alice"),
      5000,
      "alice's connection to reach the Dispatcher",
    );
    const echo = imported.tools.find((t) => t.mcpName === "echo");
    expect(echo).toMatchObject({ tool: "everything.echo", change: McpImportChange.ADDED });
    const { tool } = await stack.registryClient.getTool({ name: "everything.echo" }, admin());
    expect(tool?.spec?.secrets).toEqual([
      expect.objectContaining({
        oauthProvider: "everything",
        target: { case: "header", value: "authorization" },
      }),
    ]);
    // The import listed them with alice's token.
    expect(mcp.seen.length).toBeGreaterThan(0);
    expect(new Set(mcp.seen)).toEqual(new Set(["alice"]));

    const res = await eventually(
      () => call("everything.echo", "alice"),
      5000,
      "the imported tools",
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(JSON.stringify(res.output)).toContain("hi from alice");
    expect(mcp.seen.at(-1)).toBe("alice");

    // Bob has no connection: refused with his own link; his call never reaches the server, under
    // his token or anyone's. (Alice's session may still send a request of its own meanwhile, such
    // as its event stream, so the requests are read, not counted.)
    const bob = await failure(call("everything.echo", "bob"));
    expect(bob.code).toBe(Code.FailedPrecondition);
    expect(bob.rawMessage).toContain(
      'user "bob" has not connected an account of OAuth provider "everything"',
    );
    expect(mcp.seen).not.toContain("bob");
    expect(mcp.bodies.some((body) => body.includes("hi from alice"))).toBe(true);
    expect(mcp.bodies.filter((body) => body.includes("hi from bob"))).toEqual([]);

    // Imported again, nothing changed.
    const again = await importAs("everything", mcp.url, "alice");
    expect(again.tools.find((t) => t.mcpName === "echo")?.change).toBe(McpImportChange.UNCHANGED);
  });

  it("refuses an authorization server without registration, naming what to register and where", async () => {
    const refused = await failure(importAs("closed", mcpClosed.url, "alice"));
    expect(refused.code).toBe(Code.FailedPrecondition);
    for (const part of [
      `issuer ${closed.issuer} offers no dynamic client registration (RFC 7591)`,
      `redirect URI ${redirectUri}`,
      'put provider "closed" with that client_id and its client_secret',
    ])
      expect(refused.rawMessage).toContain(part);
    const { providers } = await stack.permissionClient.listOAuthProviders({}, admin());
    expect(providers.map((p) => p.spec?.name)).toEqual(["everything"]);
  });

  it("refuses a provider put with a client secret but no client id, or an exchange without one", async () => {
    const put = (provider: { tokenExchange?: boolean }, clientSecret: string) =>
      failure(
        stack.permissionClient.putOAuthProvider(
          { provider: { name: "half", issuer: as.issuer, ...provider }, clientSecret },
          admin(),
        ),
      );
    const secretOnly = await put({}, "a-secret");
    expect([secretOnly.code, secretOnly.rawMessage]).toEqual([
      Code.InvalidArgument,
      expect.stringContaining("client_secret: is given without provider.client_id"),
    ]);
    const exchange = await put({ tokenExchange: true }, "");
    expect([exchange.code, exchange.rawMessage]).toEqual([
      Code.InvalidArgument,
      expect.stringContaining("provider.client_id: is required with token_exchange"),
    ]);
  });
});
