import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { CallStatus, SecretHolderKind, SecretToolKind, type ToolSpecSchema } from "@toolmesh/proto";
import {
  allowSpec,
  chainServices,
  connectAs,
  eventually,
  failure,
  filesUnder,
  type ProtectedTool,
  secretsFound,
  startOAuthServer,
  startProtectedTool,
  startStack,
  type TestOAuthServer,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Access tokens live this long at the authorization server; toolmesh refreshes 2 s before. */
const ACCESS_TTL_S = 4;

// Per-user upstream credentials end to end: a real authorization server (oidc-provider), a tool it
// protects, the whole chain (Permission's vault, the Dispatcher's injection), Callback and the
// memory writer deriving their views; then every store and log searched for the values.
describe("vault and OAuth upstreams", () => {
  let stack: TestStack;
  let as: TestOAuthServer;
  let tool: ProtectedTool;
  let echo: http.Server;
  let echoUrl = "";
  const planted = `planted-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const admin = () => stack.as(stack.adminToken);

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
      env: { TOOLMESH_OAUTH_REFRESH_MARGIN_MS: "2000" },
    });
    const permissionUrl = stack.stackFile().services.permission?.url;
    tool = await startProtectedTool(() => as.issuer);
    as = await startOAuthServer({
      redirectUri: `${permissionUrl}/oauth/callback`,
      resource: tool.url,
      accessTokenTtlS: ACCESS_TTL_S,
      // A refresh token used twice revokes its grant, and each refresh answers late enough that
      // concurrent calls overlap it: a second refresh would show as a user refused.
      rotateRefreshTokens: true,
      refreshDelayMs: 300,
    });
    // A tool that tells what it was given: the planted secret comes back in its output and error.
    echo = http.createServer((req, res) => {
      req.resume();
      const key = String(req.headers["x-api-key"] ?? "");
      const fail = (req.url ?? "").includes("fail");
      res.writeHead(fail ? 400 : 200, { "content-type": "application/json" });
      res.end(JSON.stringify(fail ? { error: `bad key ${key}` } : { key, [key]: "as a key" }));
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;

    await stack.permissionClient.putOAuthProvider(
      {
        provider: {
          name: "acme",
          issuer: as.issuer,
          clientId: as.clientId,
          scopes: ["openid", "offline_access", "tools"],
          resource: tool.url,
        },
        clientSecret: as.clientSecret,
      },
      admin(),
    );
    await register({
      name: "acme.whoami",
      runtime: { kind: { case: "remote", value: { url: tool.url, headers: {} } } },
      secrets: [{ oauthProvider: "acme", target: { case: "header", value: "authorization" } }],
    });
    await register({
      name: "echo.key",
      runtime: { kind: { case: "remote", value: { url: `${echoUrl}/ok`, headers: {} } } },
      secrets: [{ secret: "echo-key", target: { case: "header", value: "x-api-key" } }],
    });
    await register({
      name: "echo.fail",
      runtime: { kind: { case: "remote", value: { url: `${echoUrl}/fail`, headers: {} } } },
      secrets: [{ secret: "echo-key", target: { case: "header", value: "x-api-key" } }],
    });
    await stack.grantAll("bot");
    // The users the agent acts for may use every tool too.
    await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin());
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await as?.stop();
    await tool?.stop();
    echo?.close();
  });

  async function register(
    spec: MessageInitShape<typeof ToolSpecSchema> & { name: string },
  ): Promise<void> {
    await stack.registryClient.registerTool(
      {
        tool: {
          description: "a tool of the vault test",
          inputSchema: { type: "object" },
          ...spec,
        },
      },
      admin(),
    );
  }

  async function call(tool: string, user: string) {
    const token = await stack.agentToken("bot", { onBehalfOf: user });
    return stack.dispatcherClient().dispatch({ tool, arguments: {} }, stack.as(token));
  }

  /** The refusal of a user who has not connected: FAILED_PRECONDITION with the connect link. */
  async function refusedWithLink(user: string): Promise<string> {
    const error = await failure(call("acme.whoami", user));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toContain(
      `user "${user}" has not connected an account of OAuth provider "acme"`,
    );
    const link = /open (\S+) to connect it/.exec(error.rawMessage)?.[1];
    expect(link).toMatch(/\/oauth\/connect\?ticket=/);
    return link ?? "";
  }

  it("refuses a user without a connection with the link, and after connecting calls with the user's own token", async () => {
    const aliceLink = await refusedWithLink("alice");
    const page = await connectAs(aliceLink, "alice");
    expect(page.status).toBe(200);
    expect(page.text).toContain("is connected to toolmesh for user alice");

    const res = await eventually(() => call("acme.whoami", "alice"), 2000, "alice's connection");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ user: "alice" });

    // Another user's call uses theirs.
    await connectAs(await refusedWithLink("bob"), "bob");
    const bob = await eventually(() => call("acme.whoami", "bob"), 2000, "bob's connection");
    expect(bob.output).toEqual({ user: "bob" });
    expect(new Set(tool.seen.map((s) => s.sub))).toEqual(new Set(["alice", "bob"]));
    const { connections } = await stack.permissionClient.listConnections(
      { provider: "acme" },
      admin(),
    );
    expect(connections.map((c) => c.userId).sort()).toEqual(["alice", "bob"]);
  });

  it("refreshes an access token before it expires, and never sends an expired one", async () => {
    const first = tool.seen.filter((s) => s.sub === "alice").at(-1);
    expect(first).toBeDefined();
    // Past the refresh margin (2 s before expiry) by more than the second toolmesh may count
    // past the token's `exp` (expires_in is whole seconds), still before the token expires.
    const refreshAt = (first?.exp ?? 0) * 1000 - 2000 + 1100;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, refreshAt - Date.now())));
    const res = await call("acme.whoami", "alice");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(as.grants).toContain("refresh_token");
    const latest = tool.seen.filter((s) => s.sub === "alice").at(-1);
    expect(latest?.token).not.toBe(first?.token);
    for (const s of tool.seen) expect(s.exp * 1000).toBeGreaterThan(s.at);
  });

  it("a revoked connection stops the user's next call, and only that user's", async () => {
    await stack.permissionClient.revokeConnection({ provider: "acme", userId: "alice" }, admin());
    expect(as.revoked.length).toBeGreaterThan(0);
    await eventually(
      async () => refusedWithLink("alice"),
      2000,
      "the revocation to reach the Dispatcher",
    );
    expect((await call("acme.whoami", "bob")).output).toEqual({ user: "bob" });
  });

  it("two concurrent calls of one user whose token nears expiry refresh it once", async () => {
    const last = tool.seen.filter((s) => s.sub === "bob").at(-1);
    expect(last).toBeDefined();
    // Past the refresh margin, as above: both calls find the token due for a refresh.
    const refreshAt = (last?.exp ?? 0) * 1000 - 2000 + 1100;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, refreshAt - Date.now())));
    const refreshes = as.grants.filter((g) => g === "refresh_token").length;
    const [first, second] = await Promise.all([
      call("acme.whoami", "bob"),
      call("acme.whoami", "bob"),
    ]);
    expect([first.output, second.output]).toEqual([{ user: "bob" }, { user: "bob" }]);
    expect(as.grants.filter((g) => g === "refresh_token")).toHaveLength(refreshes + 1);
    const [a, b] = tool.seen.slice(-2);
    expect(a?.token).toBe(b?.token);
    expect(a?.token).not.toBe(last?.token);
  });

  it("injects a vault secret into the backend request only; what the tool echoes comes back hidden", async () => {
    const missing = await failure(call("echo.key", "carol"));
    expect(missing.code).toBe(Code.FailedPrecondition);
    expect(missing.rawMessage).toContain('needs secret "echo-key"');
    await stack.permissionClient.putSecret(
      {
        name: "echo-key",
        scope: {
          toolKind: SecretToolKind.GLOB,
          tool: "echo.*",
          holderKind: SecretHolderKind.EVERYONE,
        },
        value: planted,
      },
      admin(),
    );
    const ok = await eventually(
      () => call("echo.key", "carol"),
      2000,
      "the secret to reach the Dispatcher",
    );
    expect(ok.status).toBe(CallStatus.SUCCESS);
    expect(ok.output).toEqual({ key: "[redacted]", "[redacted]": "as a key" });
    const failed = await call("echo.fail", "carol");
    expect(failed.status).toBe(CallStatus.FAILURE);
    expect(failed.error?.message).toContain("bad key [redacted]");
    const { secrets } = await stack.permissionClient.listSecrets({}, admin());
    expect(secrets.map((s) => [s.name, s.version])).toEqual([["echo-key", 1n]]);
    expect(
      JSON.stringify(secrets, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
    ).not.toContain(planted);
  });

  it("no store, log or metrics page holds a secret's bytes", async () => {
    // Outcomes, memory files and the audit index are derived after the call: let them land.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const values = [planted, as.clientSecret, ...new Set(tool.seen.map((s) => s.token))];
    const pages = Object.values(stack.stackFile().services).flatMap((service) =>
      service.url ? [`${service.url}/metrics`] : [],
    );
    expect(await secretsFound(values, { dirs: [stack.dataDir], pages })).toEqual([]);
    // The search did read the stores: the NATS store, the audit index and the logs are there.
    const files = (await filesUnder(stack.dataDir)).map((f) => path.relative(stack.dataDir, f));
    expect(files.some((f) => f.includes("jetstream"))).toBe(true);
    expect(files.some((f) => f.startsWith("logs"))).toBe(true);
  });

  it("rotates JWT signing keys with an overlap: tokens of both keys verify until the old one is retired", async () => {
    const first = (await stack.permissionClient.addSigningKey({}, admin())).key;
    const tokenA = (
      await stack.permissionClient.issueToken({ agentId: "bot", userId: "bob" }, admin())
    ).token;
    const second = (await stack.permissionClient.addSigningKey({}, admin())).key;
    const tokenB = (
      await stack.permissionClient.issueToken({ agentId: "bot", userId: "bob" }, admin())
    ).token;
    const whoami = (token: string) =>
      stack.dispatcherClient().dispatch({ tool: "acme.whoami", arguments: {} }, stack.as(token));
    expect((await eventually(() => whoami(tokenA), 2000, "the first key")).output).toEqual({
      user: "bob",
    });
    expect((await eventually(() => whoami(tokenB), 2000, "the second key")).output).toEqual({
      user: "bob",
    });
    await expect(
      stack.permissionClient.retireSigningKey({ kid: second?.kid ?? "" }, admin()),
    ).rejects.toMatchObject({ code: Code.FailedPrecondition });
    await stack.permissionClient.retireSigningKey({ kid: first?.kid ?? "" }, admin());
    const refused = await eventually(
      async () => {
        const error = await failure(whoami(tokenA));
        if (error.code !== Code.Unauthenticated) throw error;
        return error;
      },
      2000,
      "the retired key to stop verifying",
    );
    expect(refused).toBeInstanceOf(ConnectError);
    expect((await whoami(tokenB)).output).toEqual({ user: "bob" });
  });
});
