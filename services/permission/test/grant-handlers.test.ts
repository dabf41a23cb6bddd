import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import {
  ChangeType,
  Effect,
  type PermissionService,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { freshForEachTest } from "@toolmesh/testkit/hooks";
import { beforeEach, describe, expect, it } from "vitest";
import { grantSpec, type SpecInit } from "./grant-spec.js";
import { expectBadField, permissionHandlers } from "./permission-handlers.js";

// Grant, Revoke and ListGrants over in-memory dependencies (permissionHandlers()).
const t = freshForEachTest(permissionHandlers);

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
      "a deny grant that requires the caller's confirmation",
      { effect: Effect.DENY, requiresConfirmation: true },
      "grant.requires_confirmation: applies to allow grants only (a deny grant refuses outright); drop it or make the grant EFFECT_ALLOW",
    ],
    [
      "an unlisted deny grant",
      { effect: Effect.DENY, unlisted: true },
      "grant.unlisted: applies to allow grants only (a deny grant lists nothing); drop it or make the grant EFFECT_ALLOW",
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
