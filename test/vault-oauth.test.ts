import { Code, ConnectError } from "@toolmesh/errors";
import { ApprovalDecision, CallStatus } from "@toolmesh/proto";
import { connectAs, eventually, failure } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startVaultStack, type VaultStack } from "./vault-fixture.js";

// Per-user upstream credentials end to end: a real authorization server (oidc-provider), a tool it
// protects, the whole chain (Permission's vault, the Dispatcher's injection), Callback and the
// memory writer deriving their views (test/vault-planted.test.ts searches every store for them).
describe("vault and OAuth upstreams", () => {
  let vault: VaultStack;
  const planted = `planted-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const admin = () => vault.stack.as(vault.stack.adminToken);
  const call = (tool: string, user: string) => vault.call(tool, user);

  beforeAll(async () => {
    // A refresh token used twice revokes its grant, and each refresh answers late enough that
    // concurrent calls overlap it: a second refresh would show as a user refused.
    vault = await startVaultStack({ oauth: { rotateRefreshTokens: true, refreshDelayMs: 300 } });
  }, 90_000);

  afterAll(async () => {
    await vault?.stop();
  });

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
    expect(new Set(vault.tool.seen.map((s) => s.sub))).toEqual(new Set(["alice", "bob"]));
    const { connections } = await vault.stack.permissionClient.listConnections(
      { provider: "acme" },
      admin(),
    );
    expect(connections.map((c) => c.userId).sort()).toEqual(["alice", "bob"]);
  });

  it("refreshes an access token before it expires, and never sends an expired one", async () => {
    const first = vault.tool.seen.filter((s) => s.sub === "alice").at(-1);
    expect(first).toBeDefined();
    await vault.untilRefreshDue("alice");
    const res = await call("acme.whoami", "alice");
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(vault.as.grants).toContain("refresh_token");
    const latest = vault.tool.seen.filter((s) => s.sub === "alice").at(-1);
    expect(latest?.token).not.toBe(first?.token);
    for (const s of vault.tool.seen) expect(s.exp * 1000).toBeGreaterThan(s.at);
  });

  it("a revoked connection stops the user's next call, and only that user's", async () => {
    await vault.stack.permissionClient.revokeConnection(
      { provider: "acme", userId: "alice" },
      admin(),
    );
    expect(vault.as.revoked.length).toBeGreaterThan(0);
    await eventually(
      async () => refusedWithLink("alice"),
      2000,
      "the revocation to reach the Dispatcher",
    );
    expect((await call("acme.whoami", "bob")).output).toEqual({ user: "bob" });
  });

  it("two concurrent calls of one user whose token nears expiry refresh it once", async () => {
    const last = vault.tool.seen.filter((s) => s.sub === "bob").at(-1);
    expect(last).toBeDefined();
    // Both calls find the token due for a refresh.
    await vault.untilRefreshDue("bob");
    const refreshes = vault.as.grants.filter((g) => g === "refresh_token").length;
    const [first, second] = await Promise.all([
      call("acme.whoami", "bob"),
      call("acme.whoami", "bob"),
    ]);
    expect([first.output, second.output]).toEqual([{ user: "bob" }, { user: "bob" }]);
    expect(vault.as.grants.filter((g) => g === "refresh_token")).toHaveLength(refreshes + 1);
    const [a, b] = vault.tool.seen.slice(-2);
    expect(a?.token).toBe(b?.token);
    expect(a?.token).not.toBe(last?.token);
  });

  it("injects a vault secret into the backend request only; what the tool echoes comes back hidden", async () => {
    const missing = await failure(call("echo.ok", "carol"));
    expect(missing.code).toBe(Code.FailedPrecondition);
    expect(missing.rawMessage).toContain('needs secret "echo-key"');
    await vault.putEchoKey(planted);
    const ok = await eventually(
      () => call("echo.ok", "carol"),
      2000,
      "the secret to reach the Dispatcher",
    );
    expect(ok.status).toBe(CallStatus.SUCCESS);
    expect(ok.output).toEqual({ key: "[redacted]", "[redacted]": "as a key" });
    const failed = await call("echo.fail", "carol");
    expect(failed.status).toBe(CallStatus.FAILURE);
    expect(failed.error?.message).toContain("bad key [redacted]");
    const { secrets } = await vault.stack.permissionClient.listSecrets({}, admin());
    expect(secrets.map((s) => [s.name, s.version])).toEqual([["echo-key", 1n]]);
    expect(
      JSON.stringify(secrets, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
    ).not.toContain(planted);
  });

  it("rotates JWT signing keys with an overlap: tokens of both keys verify until the old one is retired", async () => {
    const first = (await vault.stack.permissionClient.addSigningKey({}, admin())).key;
    const tokenA = (
      await vault.stack.permissionClient.issueToken({ agentId: "bot", userId: "bob" }, admin())
    ).token;
    const second = (await vault.stack.permissionClient.addSigningKey({}, admin())).key;
    const tokenB = (
      await vault.stack.permissionClient.issueToken({ agentId: "bot", userId: "bob" }, admin())
    ).token;
    const whoami = (token: string) =>
      vault.stack
        .dispatcherClient()
        .dispatch({ tool: "acme.whoami", arguments: {} }, vault.stack.as(token));
    expect((await eventually(() => whoami(tokenA), 2000, "the first key")).output).toEqual({
      user: "bob",
    });
    expect((await eventually(() => whoami(tokenB), 2000, "the second key")).output).toEqual({
      user: "bob",
    });
    await expect(
      vault.stack.permissionClient.retireSigningKey({ kid: second?.kid ?? "" }, admin()),
    ).rejects.toMatchObject({ code: Code.FailedPrecondition });
    await vault.stack.permissionClient.retireSigningKey({ kid: first?.kid ?? "" }, admin());
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
  it("refuses an approved call whose user's connection was revoked while it waited", async () => {
    await vault.register({
      name: "acme.held",
      requiresApproval: true,
      runtime: { kind: { case: "remote", value: { url: vault.tool.url, headers: {} } } },
      secrets: [{ oauthProvider: "acme", target: { case: "header", value: "authorization" } }],
    });
    const held = await eventually(
      async () => {
        const res = await call("acme.held", "bob");
        expect(res.status).toBe(CallStatus.PENDING);
        return res;
      },
      2000,
      "the held tool to reach the Dispatcher",
    );
    await vault.stack.permissionClient.revokeConnection(
      { provider: "acme", userId: "bob" },
      admin(),
    );
    await eventually(
      async () => refusedWithLink("bob"),
      2000,
      "the revocation to reach the Dispatcher",
    );
    const seen = vault.tool.seen.length;
    const decided = await vault.stack
      .dispatcherClient()
      .decideApproval({ callId: held.callId, decision: ApprovalDecision.APPROVE }, admin());
    expect(decided.result).toMatchObject({
      status: CallStatus.REFUSED,
      refusalCode: "FAILED_PRECONDITION",
      error: { code: "secret_missing" },
    });
    expect(decided.result?.error?.message).toContain(
      'user "bob" has not connected an account of OAuth provider "acme"',
    );
    expect(vault.tool.seen).toHaveLength(seen);
  });
});
