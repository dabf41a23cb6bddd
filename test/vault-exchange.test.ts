import { Code } from "@toolmesh/errors";
import { CallStatus } from "@toolmesh/proto";
import {
  allowSpec,
  failure,
  type ProtectedTool,
  startOAuthServer,
  startProtectedTool,
  startStack,
  type TestOAuthServer,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";

// RFC 8693 end to end: an upstream (oidc-provider, the exchange added through registerGrantType)
// that trusts toolmesh's signing keys, a tool it protects, and the whole chain: a call's user
// becomes an upstream token without ever connecting an account.
describe("token exchange for OAuth upstreams", () => {
  let stack: TestStack;
  let as: TestOAuthServer;
  let tool: ProtectedTool;
  const admin = () => stack.as(stack.adminToken);

  beforeAll(async () => {
    stack = await startStack();
    const permissionUrl = stack.stackFile().services.permission?.url ?? "";
    tool = await startProtectedTool(() => as.issuer);
    as = await startOAuthServer({
      redirectUri: `${permissionUrl}/oauth/callback`,
      resource: tool.url,
      accessTokenTtlS: 300,
      // The subject tokens are toolmesh's: its issuer (TOOLMESH_JWT_ISSUER) and its JWKS.
      tokenExchange: { issuer: "toolmesh", jwksUri: `${permissionUrl}/.well-known/jwks.json` },
    });
    for (const [name, clientId] of [
      ["corp", as.clientId],
      ["corp-unknown-client", "not-a-client"],
    ] as const)
      await stack.permissionClient.putOAuthProvider(
        {
          provider: {
            name,
            issuer: as.issuer,
            clientId,
            scopes: ["tools"],
            resource: tool.url,
            tokenExchange: true,
          },
          clientSecret: as.clientSecret,
        },
        admin(),
      );
    await stack.permissionClient.addSigningKey({}, admin());
    for (const [name, provider] of [
      ["corp.whoami", "corp"],
      ["corp.misconfigured", "corp-unknown-client"],
    ] as const)
      await stack.registryClient.registerTool(
        {
          tool: {
            name,
            description: "says whose upstream token it was called with",
            inputSchema: { type: "object" },
            runtime: { kind: { case: "remote", value: { url: tool.url, headers: {} } } },
            secrets: [
              { oauthProvider: provider, target: { case: "header", value: "authorization" } },
            ],
          },
        },
        admin(),
      );
    await stack.grantAll("bot");
    await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin());
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await as?.stop();
    await tool?.stop();
  });

  async function call(name: string, user: string) {
    const token = await stack.agentToken("bot", { onBehalfOf: user });
    return stack.dispatcherClient().dispatch({ tool: name, arguments: {} }, stack.as(token));
  }

  it("turns each caller's user into their own upstream token, with no account connected", async () => {
    const alice = await call("corp.whoami", "alice");
    expect([alice.status, alice.output]).toEqual([CallStatus.SUCCESS, { user: "alice" }]);
    const bob = await call("corp.whoami", "bob");
    expect(bob.output).toEqual({ user: "bob" });
    // Each was an RFC 8693 exchange of a subject token naming the user and the agent acting.
    expect(as.exchanged).toEqual([
      { sub: "alice", act: "bot" },
      { sub: "bob", act: "bot" },
    ]);
    expect(as.grants.filter((g) => g === TOKEN_EXCHANGE)).toHaveLength(2);
    expect(tool.seen.map((s) => s.sub)).toEqual(["alice", "bob"]);
    const { connections } = await stack.permissionClient.listConnections({}, admin());
    expect(connections).toEqual([]);
  });

  it("uses an exchanged token again until it nears its expiry", async () => {
    const again = await call("corp.whoami", "alice");
    expect(again.output).toEqual({ user: "alice" });
    expect(as.exchanged).toHaveLength(2);
    expect(tool.seen.at(-1)?.token).toBe(tool.seen[0]?.token);
  });

  it("refuses a call that acts for no user before it runs", async () => {
    const token = await stack.agentToken("bot");
    const error = await failure(
      stack.dispatcherClient().dispatch({ tool: "corp.whoami", arguments: {} }, stack.as(token)),
    );
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toContain(
      'needs a user\'s account of OAuth provider "corp", and the call acts for no user',
    );
    expect(as.exchanged).toHaveLength(2);
  });

  it("fails a call whose exchange the upstream refuses, naming the provider; the tool never runs", async () => {
    const seen = tool.seen.length;
    const res = await call("corp.misconfigured", "alice");
    expect(res.status).toBe(CallStatus.FAILURE);
    expect(res.error?.code).toBe("secret_unavailable");
    expect(res.error?.message).toContain('OAuth provider "corp-unknown-client"');
    expect(res.error?.message).toContain("invalid_client");
    expect(tool.seen).toHaveLength(seen);
  });
});
