import { create, type MessageInitShape, toJsonString } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { Code, type ConnectError } from "@toolmesh/errors";
import {
  ApiKeyRecordSchema,
  BadFieldSchema,
  ChangeType,
  Effect,
  type GrantSpec,
  GrantSpecSchema,
  ListApiKeysResponseSchema,
  PermissionService,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { createPermissionHandlers } from "../src/handlers.js";
import { type MemoryPermission, memoryPermission } from "./memory-deps.js";

// PermissionService's handlers over an in-memory store, recorded events and a registry snapshot
// in memory, behind the real auth interceptor (JWTs and API keys verified as in production),
// reached through Connect's in-memory router transport.

type SpecInit = MessageInitShape<typeof GrantSpecSchema>;

/** A valid grant spec; tests override one field at a time. */
function grantSpec(overrides: SpecInit = {}): GrantSpec {
  return create(GrantSpecSchema, {
    principal: { kind: PrincipalKind.AGENT, id: "a1" },
    resource: { kind: ResourceKind.TOOL, pattern: "data.query" },
    scopes: ["read:data"],
    effect: Effect.ALLOW,
    enabled: true,
    ...(overrides as object),
  });
}

interface Setup extends MemoryPermission {
  client: Client<typeof PermissionService>;
  admin: ReturnType<typeof as>;
  /** Adds a grant as the admin, one millisecond after the previous one (ids sort by time). */
  grant(overrides?: SpecInit): Promise<string>;
}

async function setup(): Promise<Setup> {
  const p = await memoryPermission();
  const transport = createRouterTransport(
    (router) => {
      router.service(PermissionService, createPermissionHandlers(p.deps));
    },
    { router: { interceptors: p.interceptors } },
  );
  const client = createClient(PermissionService, transport);
  const admin = as(p.tokens.admin);
  return {
    ...p,
    client,
    admin,
    async grant(overrides = {}) {
      p.clock.ms += 1;
      const res = await client.grant({ grant: grantSpec(overrides) }, admin);
      return res.grant?.id ?? "";
    },
  };
}

/** Asserts INVALID_ARGUMENT with exactly this message and a BadField detail naming the field. */
function expectBadField(error: ConnectError, message: string): void {
  expect(error.code, message).toBe(Code.InvalidArgument);
  expect(error.rawMessage).toBe(message);
  expect(error.findDetails(BadFieldSchema)[0]?.field).toBe(message.slice(0, message.indexOf(":")));
}

let t: Setup;
beforeEach(async () => {
  t = await setup();
});

describe("Grant", () => {
  it("stores the grant with a time-ordered id, its creator and time, and announces it", async () => {
    const first = await t.client.grant({ grant: grantSpec() }, t.admin);
    const grant = first.grant;
    expect(grant?.id).toMatch(/^[0-9a-f]{20}$/);
    expect(grant?.id.slice(0, 12)).toBe(t.clock.ms.toString(16).padStart(12, "0"));
    expect(grant?.createdBy).toBe("ops");
    expect(grant?.createdAt).toEqual(timestampFromMs(t.clock.ms));
    expect(grant?.spec).toMatchObject({ scopes: ["read:data"], effect: Effect.ALLOW });
    expect(t.events.changes).toMatchObject([
      {
        by: { agentId: "ops", roles: ["admin"] },
        change: {
          kind: "grant",
          id: grant?.id,
          type: ChangeType.PUT,
          reason: `created grant ${grant?.id}: allow agent "a1" scopes read:data on data.query`,
        },
      },
    ]);
    t.clock.ms += 1;
    const second = await t.grant({ effect: Effect.DENY, scopes: ["*"] });
    expect(second > (grant?.id ?? "")).toBe(true);
    expect(t.events.changes[1]?.change.reason).toBe(
      `created grant ${second}: deny agent "a1" scopes * on data.query`,
    );
    const listed = await t.client.listGrants({}, t.admin);
    expect(listed.grants.map((g) => g.id)).toEqual([grant?.id, second]);
  });

  const badGrants: [string, SpecInit | undefined, string][] = [
    ["no grant", undefined, "grant: is required"],
    [
      "an unspecified principal kind",
      { principal: { kind: PrincipalKind.UNSPECIFIED, id: "a1" } },
      "grant.principal.kind: must be AGENT, USER or ROLE",
    ],
    [
      "an empty principal id",
      { principal: { kind: PrincipalKind.AGENT, id: "" } },
      "grant.principal.id: must not be empty",
    ],
    [
      "a partial wildcard principal",
      { principal: { kind: PrincipalKind.AGENT, id: "a*" } },
      "grant.principal.id: may be * (every principal of the kind) but not contain *",
    ],
    [
      "a role that is not a role name",
      { principal: { kind: PrincipalKind.ROLE, id: "Admin" } },
      "grant.principal.id: must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter",
    ],
    [
      "an unspecified resource kind",
      { resource: { kind: ResourceKind.UNSPECIFIED, pattern: "data.query" } },
      "grant.resource.kind: must be TOOL, GLOB or GROUP",
    ],
    [
      "a glob with an empty segment",
      { resource: { kind: ResourceKind.GLOB, pattern: "data..*" } },
      "grant.resource.pattern: glob has an empty segment (two dots, or a leading or trailing dot)",
    ],
    [
      "a wildcard in a TOOL resource",
      { resource: { kind: ResourceKind.TOOL, pattern: "data.*" } },
      "grant.resource.pattern: must be a tool name: 1-64 characters of a-z, 0-9, _, - and single dots between parts, starting with a letter (use kind GLOB for wildcards)",
    ],
    [
      "a group name with a space",
      { resource: { kind: ResourceKind.GROUP, pattern: "my group" } },
      "grant.resource.pattern: must be a group name: 1-64 characters of a-z, 0-9, _, - and single dots between parts, starting with a letter (use kind GLOB for wildcards)",
    ],
    ["no scopes", { scopes: [] }, "grant.scopes: must list at least one scope, or * for all"],
    [
      "33 scopes",
      { scopes: Array.from({ length: 33 }, (_, i) => `read:s${i}`) },
      "grant.scopes: has 33 scopes; at most 32 allowed",
    ],
    [
      "* with another scope",
      { scopes: ["*", "read:data"] },
      "grant.scopes[0]: * covers every scope; list it alone",
    ],
    [
      "a scope without an action",
      { scopes: ["read data"] },
      'grant.scopes[0]: "read data" is not a scope; expected action:resource such as read:data',
    ],
    [
      "a repeated scope",
      { scopes: ["read:a", "read:a"] },
      "grant.scopes[1]: repeats the scope read:a",
    ],
    [
      "an unspecified effect",
      { effect: Effect.UNSPECIFIED },
      "grant.effect: must be ALLOW or DENY",
    ],
    [
      "a deny grant that requires approval",
      { effect: Effect.DENY, requiresApproval: true },
      "grant.requires_approval: applies to allow grants only (a deny grant refuses outright); drop it or make the grant EFFECT_ALLOW",
    ],
    [
      "a disabled grant",
      { enabled: false },
      "grant.enabled: must be true for a new grant (a disabled one would never apply); disable an existing grant with UpdateGrant",
    ],
    [
      "a description over 512 characters",
      { description: "d".repeat(513) },
      "grant.description: is 513 characters; at most 512 allowed",
    ],
  ];
  for (const [name, overrides, message] of badGrants) {
    it(`refuses ${name} with INVALID_ARGUMENT and stores nothing`, async () => {
      const error = await failure(
        t.client.grant(overrides === undefined ? {} : { grant: grantSpec(overrides) }, t.admin),
      );
      expectBadField(error, message);
      expect([...t.store.policy.values()]).toEqual([]);
      expect(t.events.changes).toEqual([]);
    });
  }

  it("refuses an expiry that is not in the future, to the millisecond", async () => {
    const error = await failure(
      t.client.grant({ grant: grantSpec({ expiresAt: timestampFromMs(t.clock.ms) }) }, t.admin),
    );
    expectBadField(error, "grant.expires_at: is not in the future; omit it for no expiry");
    const ok = await t.client.grant(
      { grant: grantSpec({ expiresAt: timestampFromMs(t.clock.ms + 1) }) },
      t.admin,
    );
    expect(ok.grant?.spec?.expiresAt).toEqual(timestampFromMs(t.clock.ms + 1));
  });
});

describe("Revoke", () => {
  it("removes the grant and announces it; a second Revoke is NOT_FOUND and announces nothing", async () => {
    const id = await t.grant();
    await t.client.revoke({ grantId: id }, t.admin);
    expect(t.store.getGrant(id)).toBeUndefined();
    expect(t.events.changes[1]?.change).toEqual({
      kind: "grant",
      id,
      type: ChangeType.DELETE,
      reason: `revoked grant ${id}: allow agent "a1" scopes read:data on data.query`,
    });
    const again = await failure(t.client.revoke({ grantId: id }, t.admin));
    expect(again.code).toBe(Code.NotFound);
    expect(again.rawMessage).toBe(`grant "${id}" not found; list grants with ListGrants`);
    expect(t.events.changes).toHaveLength(2);
  });

  it("refuses an empty id and one this service never issues with INVALID_ARGUMENT", async () => {
    expectBadField(
      await failure(t.client.revoke({ grantId: "" }, t.admin)),
      "grant_id: must not be empty",
    );
    expectBadField(
      await failure(t.client.revoke({ grantId: "../etc/passwd" }, t.admin)),
      "grant_id: is not an id this service issued",
    );
    expectBadField(
      await failure(t.client.revoke({ grantId: "a".repeat(41) }, t.admin)),
      "grant_id: is 41 characters; at most 40 allowed",
    );
  });
});

describe("ListGrants", () => {
  let lister: string[];
  let glob: string;
  let group: string;
  beforeEach(async () => {
    lister = [];
    for (const pattern of ["data.query", "data.insert", "mail.send"]) {
      lister.push(
        await t.grant({
          principal: { kind: PrincipalKind.AGENT, id: "lister" },
          resource: { kind: ResourceKind.TOOL, pattern },
        }),
      );
    }
    glob = await t.grant({
      principal: { kind: PrincipalKind.ROLE, id: "analyst" },
      resource: { kind: ResourceKind.GLOB, pattern: "data.*" },
    });
    group = await t.grant({
      principal: { kind: PrincipalKind.USER, id: "u1" },
      resource: { kind: ResourceKind.GROUP, pattern: "analytics" },
    });
  });

  it("filters by principal, and by resource: the exact pattern and every grant covering the tool", async () => {
    const byPrincipal = await t.client.listGrants(
      { principal: { kind: PrincipalKind.AGENT, id: "lister" } },
      t.admin,
    );
    expect(byPrincipal.grants.map((g) => g.id)).toEqual(lister);
    const byRole = await t.client.listGrants(
      { principal: { kind: PrincipalKind.ROLE, id: "analyst" } },
      t.admin,
    );
    expect(byRole.grants.map((g) => g.id)).toEqual([glob]);
    // data.insert: its TOOL grant, the data.* glob, and the group the registry puts it in.
    const forInsert = await t.client.listGrants({ resource: "data.insert" }, t.admin);
    expect(forInsert.grants.map((g) => g.id)).toEqual([lister[1], glob, group]);
    const forMail = await t.client.listGrants({ resource: "mail.send" }, t.admin);
    expect(forMail.grants.map((g) => g.id)).toEqual([lister[2]]);
    const byPattern = await t.client.listGrants({ resource: "data.*" }, t.admin);
    expect(byPattern.grants.map((g) => g.id)).toEqual([glob]);
    const all = await t.client.listGrants({}, t.admin);
    expect(all.grants.map((g) => g.id)).toEqual([...lister, glob, group]);
    expect(all.nextPageToken).toBe("");
  });

  it("pages in id order, and a grant revoked between pages shifts nothing", async () => {
    const principal = { kind: PrincipalKind.AGENT, id: "lister" };
    const first = await t.client.listGrants({ principal, pageSize: 2 }, t.admin);
    expect(first.grants.map((g) => g.id)).toEqual(lister.slice(0, 2));
    expect(first.nextPageToken).not.toBe("");
    await t.client.revoke({ grantId: lister[1] ?? "" }, t.admin);
    const second = await t.client.listGrants(
      { principal, pageSize: 2, pageToken: first.nextPageToken },
      t.admin,
    );
    expect(second.grants.map((g) => g.id)).toEqual([lister[2]]);
    expect(second.nextPageToken).toBe("");
  });

  it("refuses bad page tokens, page sizes and filters with INVALID_ARGUMENT", async () => {
    const principal = { kind: PrincipalKind.AGENT, id: "lister" };
    const { nextPageToken } = await t.client.listGrants({ principal, pageSize: 1 }, t.admin);
    const malformed =
      "page_token: malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page";
    const forged = Buffer.from(JSON.stringify({ p: "../x", f: "0" })).toString("base64url");
    const cases: [MessageInitShape<typeof PermissionService.method.listGrants.input>, string][] = [
      [{ pageToken: "garbage!" }, malformed],
      [{ pageToken: "A".repeat(600) }, malformed],
      [{ pageToken: Buffer.from("not json").toString("base64url") }, malformed],
      [{ pageToken: forged }, malformed],
      [
        { pageToken: nextPageToken },
        "page_token: was issued for different filters; repeat the request with the same filters, or start again without a page_token",
      ],
      [{ pageSize: 1001 }, "page_size: is 1001; at most 1000 allowed"],
      [{ principal: { kind: PrincipalKind.AGENT, id: "" } }, "principal.id: must not be empty"],
      [{ resource: "r".repeat(129) }, "resource: is longer than 128 characters"],
    ];
    for (const [req, message] of cases)
      expectBadField(await failure(t.client.listGrants(req, t.admin)), message);
    const page = await t.client.listGrants(
      { principal, pageSize: 1, pageToken: nextPageToken },
      t.admin,
    );
    expect(page.grants.map((g) => g.id)).toEqual([lister[1]]);
  });
});

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

describe("API keys", () => {
  it("shows the secret once, in CreateApiKey's answer; the store, events and lists never hold it", async () => {
    const res = await t.client.createApiKey(
      { agentId: "bot", userId: "u1", name: "the bot's key", roles: ["agent", "reader", "agent"] },
      t.admin,
    );
    const key = res.apiKey;
    const id = key?.id ?? "";
    expect(res.secret).toMatch(new RegExp(`^tmk_${id}_[A-Za-z0-9_-]{43}$`));
    expect(key).toMatchObject({
      agentId: "bot",
      userId: "u1",
      name: "the bot's key",
      roles: ["agent", "reader"],
      createdBy: "ops",
      revoked: false,
    });
    expect(key?.createdAt).toEqual(timestampFromMs(t.clock.ms));
    const secretPart = res.secret.slice(`tmk_${id}_`.length);
    const stored = t.store.getKey(id);
    if (!stored) throw new Error(`key ${id} was not stored`);
    expect(stored.hashAlgorithm).toBe("hmac-sha256");
    expect(toJsonString(ApiKeyRecordSchema, stored)).not.toContain(secretPart);
    expect(t.events.changes.map((c) => c.change)).toEqual([
      {
        kind: "api_key",
        id,
        type: ChangeType.PUT,
        reason: `created API key ${id} for agent "bot" with roles agent, reader`,
      },
    ]);
    const listed = await t.client.listApiKeys({}, t.admin);
    expect(listed.apiKeys.map((k) => k.id)).toEqual([id]);
    const text = toJsonString(ListApiKeysResponseSchema, listed);
    expect(text).not.toContain(secretPart);
    expect(text).not.toMatch(/salt|hash/i);
  });

  it("authenticates with the key as its agent and user until it is revoked", async () => {
    const res = await t.client.createApiKey({ agentId: "bot", userId: "u1" }, t.admin);
    const id = res.apiKey?.id ?? "";
    expect(res.apiKey?.roles).toEqual(["agent"]);
    const self = await t.client.check({ agentId: "bot", tool: "data.query" }, as(res.secret));
    expect(self.decision?.deniedPrincipal).toBe("agent:bot");
    const denied = await failure(t.client.listGrants({}, as(res.secret)));
    expect(denied.rawMessage).toBe(
      "ListGrants needs the role admin; your token has the roles agent",
    );

    await t.client.revokeApiKey({ id }, t.admin);
    expect(t.events.changes[1]?.change).toEqual({
      kind: "api_key",
      id,
      type: ChangeType.DELETE,
      reason: `revoked API key ${id} of agent "bot"`,
    });
    const revoked = await failure(
      t.client.check({ agentId: "bot", tool: "data.query" }, as(res.secret)),
    );
    expect(revoked.code).toBe(Code.Unauthenticated);
    expect(revoked.rawMessage).toBe(`bearer token rejected: API key ${id} has been revoked`);
    expect((await t.client.listApiKeys({ agentId: "bot" }, t.admin)).apiKeys).toEqual([]);
    const all = await t.client.listApiKeys({ agentId: "bot", includeRevoked: true }, t.admin);
    expect(all.apiKeys.map((k) => [k.id, k.revoked])).toEqual([[id, true]]);
  });

  it("stops a key at its expiry", async () => {
    const res = await t.client.createApiKey(
      { agentId: "bot", expiresAt: timestampFromMs(t.clock.ms + 1000) },
      t.admin,
    );
    const id = res.apiKey?.id ?? "";
    await t.client.check({ agentId: "bot", tool: "data.query" }, as(res.secret));
    t.clock.ms += 1000;
    const expired = await failure(
      t.client.check({ agentId: "bot", tool: "data.query" }, as(res.secret)),
    );
    expect(expired.code).toBe(Code.Unauthenticated);
    expect(expired.rawMessage).toBe(`bearer token rejected: API key ${id} has expired`);
  });

  it("lists keys by agent, page by page, with tokens bound to the filters", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await t.client.createApiKey({ agentId: "bot-a" }, t.admin)).apiKey?.id ?? "");
    await t.client.createApiKey({ agentId: "bot-b" }, t.admin);
    const first = await t.client.listApiKeys({ agentId: "bot-a", pageSize: 2 }, t.admin);
    const second = await t.client.listApiKeys(
      { agentId: "bot-a", pageSize: 2, pageToken: first.nextPageToken },
      t.admin,
    );
    expect(second.nextPageToken).toBe("");
    expect([...first.apiKeys, ...second.apiKeys].map((k) => k.id)).toEqual([...ids].sort());
    expect((await t.client.listApiKeys({}, t.admin)).apiKeys).toHaveLength(4);
    expectBadField(
      await failure(
        t.client.listApiKeys(
          { agentId: "bot-a", includeRevoked: true, pageToken: first.nextPageToken },
          t.admin,
        ),
      ),
      "page_token: was issued for different filters; repeat the request with the same filters, or start again without a page_token",
    );
    expectBadField(
      await failure(t.client.listApiKeys({ pageToken: "eyJhIjoiMSJ9" }, t.admin)),
      "page_token: malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page",
    );
    expectBadField(
      await failure(t.client.listApiKeys({ agentId: "bot*" }, t.admin)),
      "agent_id: must not contain *",
    );
  });

  it("refuses bad CreateApiKey and RevokeApiKey fields, and unknown keys", async () => {
    const role = "must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter";
    const cases: [MessageInitShape<typeof PermissionService.method.createApiKey.input>, string][] =
      [
        [{ agentId: "" }, "agent_id: must not be empty"],
        [{ agentId: "*" }, "agent_id: must not contain *"],
        [{ agentId: "x".repeat(129) }, "agent_id: is 129 characters; at most 128 allowed"],
        [
          { agentId: "bot", userId: "bob smith" },
          "user_id: may contain only printable ASCII characters without spaces",
        ],
        [{ agentId: "bot", roles: ["Admin!"] }, `roles[0]: ${role}`],
        [
          { agentId: "bot", roles: Array.from({ length: 17 }, (_, i) => `r${i}`) },
          "roles: has 17 roles; at most 16 allowed",
        ],
        [{ agentId: "bot", name: "n".repeat(129) }, "name: is 129 characters; at most 128 allowed"],
        [
          { agentId: "bot", expiresAt: timestampFromMs(t.clock.ms) },
          "expires_at: is not in the future; omit it for no expiry",
        ],
      ];
    for (const [req, message] of cases)
      expectBadField(await failure(t.client.createApiKey(req, t.admin)), message);
    expect(t.store.keys.size).toBe(0);
    expectBadField(
      await failure(t.client.revokeApiKey({ id: "" }, t.admin)),
      "id: must not be empty",
    );
    expectBadField(
      await failure(t.client.revokeApiKey({ id: "XYZ" }, t.admin)),
      "id: is not an id this service issued",
    );
    const unknown = await failure(t.client.revokeApiKey({ id: "abc123" }, t.admin));
    expect(unknown.code).toBe(Code.NotFound);
    expect(unknown.rawMessage).toBe('API key "abc123" not found; list keys with ListApiKeys');
    expect(t.events.changes).toEqual([]);
  });
});

describe("roles and credentials", () => {
  it("refuses every admin RPC to an agent and to a service with PERMISSION_DENIED, writing nothing", async () => {
    const existing = await t.grant();
    const before = t.events.changes.length;
    for (const [token, roles] of [
      [t.tokens.agent, "agent"],
      [t.tokens.service, "service"],
    ] as const) {
      const caller = as(token);
      const calls: [string, () => Promise<unknown>][] = [
        ["Grant", () => t.client.grant({ grant: grantSpec({ scopes: ["*"] }) }, caller)],
        ["Revoke", () => t.client.revoke({ grantId: existing }, caller)],
        ["ListGrants", () => t.client.listGrants({}, caller)],
        [
          "CreateApiKey",
          () => t.client.createApiKey({ agentId: "agent-7", roles: ["admin"] }, caller),
        ],
        ["RevokeApiKey", () => t.client.revokeApiKey({ id: "abc123" }, caller)],
        ["ListApiKeys", () => t.client.listApiKeys({}, caller)],
      ];
      for (const [method, call] of calls) {
        const error = await failure(call());
        expect(error.code, method).toBe(Code.PermissionDenied);
        expect(error.rawMessage).toBe(
          `${method} needs the role admin; your token has the roles ${roles}`,
        );
      }
    }
    expect(t.events.changes).toHaveLength(before);
    expect([...t.store.policy.values()].map((g) => g.id)).toEqual([existing]);
    expect(t.store.keys.size).toBe(0);
  });

  it("refuses a call without a credential, and an unknown API key, with UNAUTHENTICATED", async () => {
    const missing = await failure(t.client.listGrants({}));
    expect(missing.code).toBe(Code.Unauthenticated);
    expect(missing.rawMessage).toBe(
      "missing credential: send the header authorization: Bearer <token>",
    );
    const unknown = await failure(
      t.client.check(
        { agentId: "a1", tool: "data.query" },
        as(`tmk_${"0".repeat(16)}_${"A".repeat(43)}`),
      ),
    );
    expect(unknown.code).toBe(Code.Unauthenticated);
    expect(unknown.rawMessage).toBe("bearer token rejected: unknown API key");
  });
});
