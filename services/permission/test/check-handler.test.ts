import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import { Effect, type PermissionService, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { freshForEachTest } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { expectBadField, permissionHandlers } from "./permission-handlers.js";

// Check over in-memory dependencies: default deny, deny wins, groups and roles, on behalf of a
// user, expiry, self-checks, and what it refuses.
const t = freshForEachTest(permissionHandlers);

describe("Check", () => {
  it("denies by default, naming the scope no grant covers", async () => {
    const res = await t.client.check({ agentId: "a1", tool: "data.query" }, t.admin);
    expect(res.decision).toMatchObject({
      allowed: false,
      reason: 'agent "a1" has no allow grant covering scope read:data on tool "data.query"',
      missingScopes: ["read:data"],
      deniedPrincipal: "agent:a1",
      matchedGrantIds: [],
    });
    const noScopes = await t.client.check({ agentId: "a1", tool: "util.clock" }, t.admin);
    expect(noScopes.decision?.reason).toBe('agent "a1" has no allow grant on tool "util.clock"');
  });

  it("allows on a matching grant and lets a deny grant win", async () => {
    const allow = await t.grant();
    const allowed = await t.client.check({ agentId: "a1", tool: "data.query" }, t.admin);
    expect(allowed.decision).toMatchObject({
      allowed: true,
      reason: `agent "a1" may call tool "data.query" (grants ${allow})`,
      matchedGrantIds: [allow],
    });
    const deny = await t.grant({
      effect: Effect.DENY,
      resource: { kind: ResourceKind.GLOB, pattern: "data.**" },
    });
    const denied = await t.client.check({ agentId: "a1", tool: "data.query" }, t.admin);
    expect(denied.decision).toMatchObject({
      allowed: false,
      reason: `deny grant "${deny}" refuses agent "a1" scope read:data of tool "data.query"`,
      denyGrantId: deny,
      deniedPrincipal: "agent:a1",
    });
  });

  it("reads groups from the registry snapshot and roles from the request", async () => {
    const id = await t.grant({
      principal: { kind: PrincipalKind.ROLE, id: "analyst" },
      resource: { kind: ResourceKind.GROUP, pattern: "analytics" },
      scopes: ["*"],
    });
    const asAnalyst = { agentId: "a1", roles: ["analyst"] };
    expect(
      (await t.client.check({ ...asAnalyst, tool: "data.insert" }, t.admin)).decision
        ?.matchedGrantIds,
    ).toEqual([id]);
    expect(
      (await t.client.check({ ...asAnalyst, tool: "mail.send" }, t.admin)).decision?.allowed,
    ).toBe(false);
    expect(
      (await t.client.check({ agentId: "a1", tool: "data.insert" }, t.admin)).decision?.allowed,
    ).toBe(false);
  });

  it("on behalf of a user, needs the user's own grant too (no confused deputy)", async () => {
    const agentGrant = await t.grant();
    const onBehalf = { agentId: "a1", userId: "u1", tool: "data.query" };
    const withoutUser = await t.client.check(onBehalf, t.admin);
    expect(withoutUser.decision).toMatchObject({
      allowed: false,
      reason:
        'user "u1", for whom agent "a1" acts, has no allow grant covering scope read:data on tool "data.query"',
      deniedPrincipal: "user:u1",
      missingScopes: ["read:data"],
    });
    const userGrant = await t.grant({ principal: { kind: PrincipalKind.USER, id: "u1" } });
    const allowed = await t.client.check(onBehalf, t.admin);
    expect(allowed.decision).toMatchObject({
      allowed: true,
      reason: `agent "a1" and user "u1" may call tool "data.query" (grants ${agentGrant}, ${userGrant})`,
      matchedGrantIds: [agentGrant, userGrant],
    });
    const userDeny = await t.grant({
      principal: { kind: PrincipalKind.USER, id: "u1" },
      effect: Effect.DENY,
    });
    const denied = await t.client.check(onBehalf, t.admin);
    expect(denied.decision).toMatchObject({
      allowed: false,
      reason: `deny grant "${userDeny}" refuses user "u1", for whom agent "a1" acts, scope read:data of tool "data.query"`,
      deniedPrincipal: "user:u1",
    });
  });

  it("stops applying a grant at its expiry", async () => {
    await t.grant({ expiresAt: timestampFromMs(t.clock.ms + 1001) });
    expect(
      (await t.client.check({ agentId: "a1", tool: "data.query" }, t.admin)).decision?.allowed,
    ).toBe(true);
    t.clock.ms += 1000;
    expect(
      (await t.client.check({ agentId: "a1", tool: "data.query" }, t.admin)).decision?.allowed,
    ).toBe(false);
  });

  it("lets an agent check only itself, with the identity its token carries", async () => {
    const onBehalf = await t.jwt({ sub: "agent-7", roles: ["agent"], onBehalfOf: "u9" });
    await t.grant({ principal: { kind: PrincipalKind.ROLE, id: "admin" } });
    // Roles and user named in the request are ignored: the token's own are evaluated.
    const self = await t.client.check(
      { agentId: "agent-7", roles: ["admin"], tool: "data.query" },
      as(onBehalf),
    );
    expect(self.decision?.reason).toBe(
      'agent "agent-7" has no allow grant covering scope read:data on tool "data.query"',
    );
    await t.grant({ principal: { kind: PrincipalKind.AGENT, id: "agent-7" } });
    const userSide = await t.client.check(
      { agentId: "agent-7", userId: "", tool: "data.query" },
      as(onBehalf),
    );
    expect(userSide.decision?.deniedPrincipal).toBe("user:u9");
    const other = await failure(
      t.client.check({ agentId: "a1", tool: "data.query" }, as(t.tokens.agent)),
    );
    expect(other.code).toBe(Code.PermissionDenied);
    expect(other.rawMessage).toBe(
      'Check of another agent needs the role admin or service; your token may check only agent "agent-7"',
    );
    const viaService = await t.client.check(
      { agentId: "a1", tool: "data.query" },
      as(t.tokens.service),
    );
    expect(viaService.decision?.allowed).toBe(false);
  });

  it("answers NOT_FOUND for a tool the registry does not have, UNAVAILABLE before it is loaded", async () => {
    const unknown = await failure(t.client.check({ agentId: "a1", tool: "no.such" }, t.admin));
    expect(unknown.code).toBe(Code.NotFound);
    expect(unknown.rawMessage).toBe(
      'tool "no.such" not found; register it with the Registry first',
    );
    t.tools.isReady = false;
    const loading = await failure(t.client.check({ agentId: "a1", tool: "data.query" }, t.admin));
    expect(loading.code).toBe(Code.Unavailable);
    expect(loading.rawMessage).toBe("the registry snapshot is not loaded yet; retry shortly");
  });

  it("refuses bad fields with INVALID_ARGUMENT", async () => {
    const role = "must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter";
    const cases: [MessageInitShape<typeof PermissionService.method.check.input>, string][] = [
      [{ agentId: "", tool: "data.query" }, "agent_id: must not be empty"],
      [{ agentId: "a*", tool: "data.query" }, "agent_id: must not contain *"],
      [
        { agentId: "a".repeat(129), tool: "data.query" },
        "agent_id: is 129 characters; at most 128 allowed",
      ],
      [
        { agentId: "a1", userId: "u 1", tool: "data.query" },
        "user_id: may contain only printable ASCII characters without spaces",
      ],
      [{ agentId: "a1", roles: ["ok", "BAD"], tool: "data.query" }, `roles[1]: ${role}`],
      [{ agentId: "a1", tool: "" }, "tool: must name the tool to check"],
      [
        { agentId: "a1", tool: "Data Query" },
        'tool: "Data Query" is not a valid name: use lowercase letters, digits, _ - and single dots between parts, starting with a letter (for example data.query)',
      ],
      [{ agentId: "a1", tool: "t".repeat(65) }, "tool: is 65 characters; at most 64 allowed"],
    ];
    for (const [req, message] of cases)
      expectBadField(await failure(t.client.check(req, t.admin)), message);
  });
});
