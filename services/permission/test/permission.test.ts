import { stat } from "node:fs/promises";
import path from "node:path";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { API_KEY_HASH_ALGORITHM, mintApiKey } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets, subjects } from "@toolmesh/nats";
import {
  ApiKeyRecordSchema,
  AuditAction,
  AuditRecordSchema,
  ChangeType,
  Effect,
  type GrantSpec,
  GrantSpecSchema,
  PermissionChangedSchema,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { eventually, failure, mintJwt } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PermissionStack, startPermissionStack } from "./harness.js";

let stack: PermissionStack;
/** Every secret the test saw; none may appear in the service's output. */
const secrets: string[] = [];

beforeAll(async () => {
  stack = await startPermissionStack();
  secrets.push(stack.adminToken, stack.serviceToken);
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

const admin = () => stack.as(stack.adminToken);

type GrantInit = MessageInitShape<typeof GrantSpecSchema>;

function spec(overrides: GrantInit = {}): GrantSpec {
  return create(GrantSpecSchema, {
    principal: { kind: PrincipalKind.AGENT, id: "a1" },
    resource: { kind: ResourceKind.TOOL, pattern: "data.query" },
    scopes: ["read:data"],
    effect: Effect.ALLOW,
    enabled: true,
    ...(overrides as object),
  });
}

async function agentKey(agentId: string, extra: { userId?: string; expiresAtMs?: number } = {}) {
  const res = await stack.client.createApiKey(
    {
      agentId,
      userId: extra.userId ?? "",
      name: `test key of ${agentId}`,
      ...(extra.expiresAtMs ? { expiresAt: timestampFromMs(extra.expiresAtMs) } : {}),
    },
    admin(),
  );
  secrets.push(res.secret);
  return res;
}

describe("bootstrap", () => {
  it("writes the admin and service tokens with mode 0600 and logs only their paths", async () => {
    for (const name of ["admin.token", "service.token"]) {
      const info = await stat(path.join(stack.dataDir, name));
      expect(info.mode & 0o777).toBe(0o600);
    }
    expect(stack.adminToken).toMatch(/^tmk_[a-f0-9]{16}_[A-Za-z0-9_-]{43}$/);
    expect(stack.serviceToken).toMatch(/^tmk_[a-f0-9]{16}_/);
    const line = (await stack.logText("permission"))
      .split("\n")
      .find((l) => l.includes("bootstrapped the admin"));
    expect(JSON.parse(line ?? "{}")).toMatchObject({
      admin_token_file: path.join(stack.dataDir, "admin.token"),
    });
  });

  it("gives the admin token the admin role and the service token the service role", async () => {
    const keys = await stack.client.listApiKeys({}, admin());
    const roles = keys.apiKeys.map((k) => `${k.agentId}:${k.roles.join(",")}`);
    expect(roles).toEqual(
      expect.arrayContaining(["admin:admin", "toolmesh-service:service,knowhub"]),
    );
    // The service token may Check any agent but not write.
    const check = await stack.client.check(
      { agentId: "a1", tool: "data.query" },
      stack.as(stack.serviceToken),
    );
    expect(check.decision?.allowed).toBe(false);
    expect((await failure(stack.client.listGrants({}, stack.as(stack.serviceToken)))).code).toBe(
      Code.PermissionDenied,
    );
  });
});

describe("authentication", () => {
  it("refuses a missing, malformed, unknown, expired and wrong-audience token", async () => {
    const call = (headers: Record<string, string>) =>
      failure(stack.client.listGrants({}, { headers }));
    const unknownKey = `tmk_${"0".repeat(16)}_${"A".repeat(43)}`;
    const expiredJwt = await mintJwt(
      stack.jwtSecret,
      { sub: "admin", roles: ["admin"] },
      { expiresIn: Math.floor(Date.now() / 1000) - 60 },
    );
    const wrongAudience = await mintJwt(
      stack.jwtSecret,
      { sub: "admin", roles: ["admin"] },
      { audience: "someone-else" },
    );
    const cases: [Record<string, string>, string][] = [
      [{}, "missing credential"],
      [{ authorization: "Basic abc" }, "malformed authorization header"],
      [{ authorization: "Bearer not-a-token" }, "neither a JWT nor an API key"],
      [{ authorization: "Bearer tmk_short_x" }, "malformed API key"],
      [{ authorization: `Bearer ${unknownKey}` }, "unknown API key"],
      [{ authorization: `Bearer ${stack.adminToken.slice(0, -1)}B` }, "unknown API key"],
      [{ authorization: `Bearer ${expiredJwt}` }, "the JWT has expired"],
      [
        { authorization: `Bearer ${wrongAudience}` },
        'claim aud does not match this server (expected "toolmesh")',
      ],
    ];
    for (const [headers, message] of cases) {
      const error = await call(headers);
      expect(error.code, message).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toContain(message);
    }
  });

  it("refuses an expired API key", async () => {
    // A key that expired since it was issued (CreateApiKey refuses past expiries), as stored.
    const minted = mintApiKey();
    await stack.permissionKv.put(
      buckets.permission.apiKeyKey(minted.id),
      toBinary(
        ApiKeyRecordSchema,
        create(ApiKeyRecordSchema, {
          apiKey: {
            id: minted.id,
            agentId: "old",
            roles: ["admin"],
            expiresAt: timestampFromMs(Date.now() - 1000),
          },
          salt: minted.salt,
          hash: minted.hash,
          hashAlgorithm: API_KEY_HASH_ALGORITHM,
        }),
      ),
    );
    secrets.push(minted.token);
    // Until the watch delivers the record the key is unknown; either way it never works.
    const error = await eventually(
      async () => {
        const refused = await failure(stack.client.listGrants({}, stack.as(minted.token)));
        expect(refused.rawMessage).not.toContain("unknown API key");
        return refused;
      },
      1000,
      "the expired key's record to arrive",
      0,
    );
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain(`API key ${minted.id} has expired`);
  });

  it("accepts a JWT and an API key, with the principal they carry", async () => {
    const jwt = await mintJwt(stack.jwtSecret, { sub: "jwt-agent", roles: ["agent"] });
    const viaJwt = await stack.client.check(
      { agentId: "jwt-agent", tool: "data.query" },
      stack.as(jwt),
    );
    expect(viaJwt.decision?.reason).toContain('agent "jwt-agent"');
    const key = await agentKey("key-agent", { userId: "u-9" });
    const viaKey = await stack.client.check(
      { agentId: "key-agent", tool: "data.query" },
      stack.as(key.secret),
    );
    // A self-check uses the key's own user: the user side is evaluated too.
    expect(viaKey.decision?.reason).toContain('agent "key-agent"');
    expect(key.apiKey).toMatchObject({ agentId: "key-agent", userId: "u-9", roles: ["agent"] });
  });

  it("stops a revoked key within one second", async () => {
    const key = await agentKey("revoked-agent");
    const asAgent = stack.as(key.secret);
    await stack.client.check({ agentId: "revoked-agent", tool: "data.query" }, asAgent);
    await stack.client.revokeApiKey({ id: key.apiKey?.id ?? "" }, admin());
    const revokedAt = performance.now();
    const error = await eventually(
      () => failure(stack.client.check({ agentId: "revoked-agent", tool: "data.query" }, asAgent)),
      1000,
      "the revoked key to be refused",
      0,
    );
    const elapsed = performance.now() - revokedAt;
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain("has been revoked");
    expect(elapsed).toBeLessThan(1000);
  });
});

describe("authorisation", () => {
  it("refuses every admin RPC to an agent with PERMISSION_DENIED", async () => {
    const key = await agentKey("plain-agent");
    const asAgent = stack.as(key.secret);
    const calls: [string, () => Promise<unknown>][] = [
      [
        "Grant (over-broad glob and scope *)",
        () =>
          stack.client.grant(
            {
              grant: spec({
                principal: { kind: PrincipalKind.AGENT, id: "plain-agent" },
                resource: { kind: ResourceKind.GLOB, pattern: "**" },
                scopes: ["*"],
              }),
            },
            asAgent,
          ),
      ],
      ["Revoke", () => stack.client.revoke({ grantId: "00" }, asAgent)],
      ["ListGrants", () => stack.client.listGrants({}, asAgent)],
      ["CreateApiKey", () => stack.client.createApiKey({ agentId: "x" }, asAgent)],
      ["RevokeApiKey", () => stack.client.revokeApiKey({ id: key.apiKey?.id ?? "" }, asAgent)],
      ["ListApiKeys", () => stack.client.listApiKeys({}, asAgent)],
      [
        "Check of another agent",
        () => stack.client.check({ agentId: "a1", tool: "data.query" }, asAgent),
      ],
    ];
    for (const [name, call] of calls) {
      const error = await failure(call());
      expect(error.code, name).toBe(Code.PermissionDenied);
      expect(error.rawMessage, name).toMatch(/needs the role admin/);
    }
    // Nothing was written by the refused calls.
    const grants = await stack.client.listGrants(
      { principal: { kind: PrincipalKind.AGENT, id: "plain-agent" } },
      admin(),
    );
    expect(grants.grants).toEqual([]);
  });

  it("lets an agent check itself, with its own identity", async () => {
    const key = await agentKey("self-checker");
    const grant = await stack.client.grant(
      {
        grant: spec({
          principal: { kind: PrincipalKind.AGENT, id: "self-checker" },
        }),
      },
      admin(),
    );
    const res = await stack.client.check(
      { agentId: "self-checker", tool: "data.query", roles: ["admin"] },
      stack.as(key.secret),
    );
    expect(res.decision).toMatchObject({ allowed: true, matchedGrantIds: [grant.grant?.id] });
    await stack.client.revoke({ grantId: grant.grant?.id ?? "" }, admin());
  });
});

describe("bad input", () => {
  const cases: [string, GrantInit | undefined, string][] = [
    ["no grant", undefined, "grant: is required"],
    [
      "empty principal id",
      { principal: { kind: PrincipalKind.AGENT, id: "" } },
      "grant.principal.id: must not be empty",
    ],
    [
      "unspecified principal kind",
      { principal: { kind: PrincipalKind.UNSPECIFIED, id: "a1" } },
      "grant.principal.kind: must be AGENT, USER or ROLE",
    ],
    [
      "huge principal id",
      { principal: { kind: PrincipalKind.AGENT, id: "a".repeat(10_000) } },
      "grant.principal.id: is 10000 characters; at most 128 allowed",
    ],
    [
      "principal id with a space",
      { principal: { kind: PrincipalKind.USER, id: "bob smith" } },
      "grant.principal.id: may contain only printable ASCII",
    ],
    [
      "partial wildcard principal",
      { principal: { kind: PrincipalKind.AGENT, id: "a*" } },
      "grant.principal.id: may be * ",
    ],
    [
      "unspecified resource kind",
      { resource: { kind: ResourceKind.UNSPECIFIED, pattern: "x" } },
      "grant.resource.kind: must be TOOL, GLOB or GROUP",
    ],
    [
      "bad glob",
      { resource: { kind: ResourceKind.GLOB, pattern: "data..*" } },
      "grant.resource.pattern: glob has an empty segment",
    ],
    [
      "triple star glob",
      { resource: { kind: ResourceKind.GLOB, pattern: "***" } },
      "grant.resource.pattern: glob *** is not a glob",
    ],
    [
      "wildcard in a TOOL resource",
      { resource: { kind: ResourceKind.TOOL, pattern: "data.*" } },
      "grant.resource.pattern: must be a tool name",
    ],
    [
      "huge glob",
      { resource: { kind: ResourceKind.GLOB, pattern: "a".repeat(5000) } },
      "glob must be at most 128 characters",
    ],
    ["no scopes", { scopes: [] }, "grant.scopes: must list at least one scope"],
    [
      "* with other scopes",
      { scopes: ["*", "read:data"] },
      "grant.scopes[0]: * covers every scope; list it alone",
    ],
    [
      "bad scope",
      { scopes: ["read data"] },
      'grant.scopes[0]: "read data" is not a scope; expected action:resource such as read:data',
    ],
    [
      "duplicate scope",
      { scopes: ["read:a", "read:a"] },
      "grant.scopes[1]: repeats the scope read:a",
    ],
    [
      "too many scopes",
      { scopes: Array.from({ length: 40 }, (_, i) => `s${i}`) },
      "grant.scopes: has 40 scopes; at most 32 allowed",
    ],
    ["unspecified effect", { effect: Effect.UNSPECIFIED }, "grant.effect: must be ALLOW or DENY"],
    [
      "expiry in the past",
      { expiresAt: timestampFromMs(Date.now() - 60_000) },
      "grant.expires_at: is not in the future",
    ],
    ["disabled", { enabled: false }, "grant.enabled: must be true"],
    [
      "huge description",
      { description: "d".repeat(100_000) },
      "grant.description: is 100000 characters; at most 512 allowed",
    ],
  ];
  for (const [name, overrides, message] of cases) {
    it(`Grant refuses ${name} with INVALID_ARGUMENT`, async () => {
      const error = await failure(
        stack.client.grant(overrides === undefined ? {} : { grant: spec(overrides) }, admin()),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toContain(message);
    });
  }

  it("stores nothing for refused grants", async () => {
    const all = await stack.client
      .listGrants({ principal: { kind: PrincipalKind.USER, id: "bob smith" } }, admin())
      .catch((e) => e);
    expect(ConnectError.from(all).code).toBe(Code.InvalidArgument);
    const a1 = await stack.client.listGrants(
      { principal: { kind: PrincipalKind.AGENT, id: "a1" } },
      admin(),
    );
    expect(a1.grants).toEqual([]);
  });

  it("CreateApiKey refuses bad fields", async () => {
    const cases: [Parameters<typeof stack.client.createApiKey>[0], string][] = [
      [{ agentId: "" }, "agent_id: must not be empty"],
      [{ agentId: "*" }, "agent_id: must not contain *"],
      [{ agentId: "x".repeat(300) }, "agent_id: is 300 characters"],
      [{ agentId: "a", roles: ["Admin!"] }, "roles[0]: must be 1-32 characters"],
      [{ agentId: "a", name: "n".repeat(1000) }, "name: is 1000 characters"],
      [
        { agentId: "a", expiresAt: timestampFromMs(Date.now() - 1) },
        "expires_at: is not in the future",
      ],
    ];
    for (const [req, message] of cases) {
      const error = await failure(stack.client.createApiKey(req, admin()));
      expect(error.code, message).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toContain(message);
    }
  });

  it("Check, Revoke and the list RPCs refuse bad fields and unknown ids", async () => {
    const expectations: [() => Promise<unknown>, Code, string][] = [
      [
        () => stack.client.check({ agentId: "", tool: "data.query" }, admin()),
        Code.InvalidArgument,
        "agent_id: must not be empty",
      ],
      [
        () => stack.client.check({ agentId: "a1", tool: "" }, admin()),
        Code.InvalidArgument,
        "tool: must name the tool",
      ],
      [
        () => stack.client.check({ agentId: "a1", tool: "Data Query" }, admin()),
        Code.InvalidArgument,
        'tool: "Data Query" is not a valid name',
      ],
      [
        () => stack.client.check({ agentId: "a1", tool: "no.such.tool" }, admin()),
        Code.NotFound,
        'tool "no.such.tool" not found',
      ],
      [
        () => stack.client.revoke({ grantId: "" }, admin()),
        Code.InvalidArgument,
        "grant_id: must not be empty",
      ],
      [
        () => stack.client.revoke({ grantId: "../etc" }, admin()),
        Code.InvalidArgument,
        "grant_id: is not an id",
      ],
      [
        () => stack.client.revoke({ grantId: "abc123" }, admin()),
        Code.NotFound,
        'grant "abc123" not found',
      ],
      [
        () => stack.client.revokeApiKey({ id: "abc123" }, admin()),
        Code.NotFound,
        'API key "abc123" not found',
      ],
      [
        () => stack.client.listGrants({ pageToken: "garbage!" }, admin()),
        Code.InvalidArgument,
        "page_token: malformed page token",
      ],
      [
        () => stack.client.listGrants({ pageSize: 5000 }, admin()),
        Code.InvalidArgument,
        "page_size: is 5000; at most 1000",
      ],
      [
        () => stack.client.listApiKeys({ pageToken: "eyJhIjoiMSJ9" }, admin()),
        Code.InvalidArgument,
        "page_token",
      ],
    ];
    for (const [call, code, message] of expectations) {
      const error = await failure(call());
      expect(error.code, message).toBe(code);
      expect(error.rawMessage).toContain(message);
    }
  });
});

describe("listing", () => {
  it("filters grants by principal and by resource, and pages with validated tokens", async () => {
    const created: string[] = [];
    for (const pattern of ["data.query", "data.insert", "mail.send"]) {
      const res = await stack.client.grant(
        {
          grant: spec({
            principal: { kind: PrincipalKind.AGENT, id: "lister" },
            resource: { kind: ResourceKind.TOOL, pattern },
          }),
        },
        admin(),
      );
      created.push(res.grant?.id ?? "");
    }
    const glob = await stack.client.grant(
      {
        grant: spec({
          principal: { kind: PrincipalKind.ROLE, id: "analyst" },
          resource: { kind: ResourceKind.GLOB, pattern: "data.*" },
        }),
      },
      admin(),
    );
    const group = await stack.client.grant(
      {
        grant: spec({
          principal: { kind: PrincipalKind.USER, id: "u1" },
          resource: { kind: ResourceKind.GROUP, pattern: "analytics" },
        }),
      },
      admin(),
    );
    const principal = { kind: PrincipalKind.AGENT, id: "lister" };
    const pages: string[][] = [];
    let pageToken = "";
    do {
      const res = await stack.client.listGrants({ principal, pageSize: 2, pageToken }, admin());
      pages.push(res.grants.map((g) => g.id));
      pageToken = res.nextPageToken;
    } while (pageToken !== "");
    expect(pages.map((p) => p.length)).toEqual([2, 1]);
    expect(pages.flat()).toEqual([...created].sort());

    const second = await stack.client.listGrants({ principal, pageSize: 2 }, admin());
    const mixed = await failure(
      stack.client.listGrants({ pageSize: 2, pageToken: second.nextPageToken }, admin()),
    );
    expect(mixed.rawMessage).toContain("page_token: was issued for different filters");

    // A resource filter finds exact patterns and every grant covering the tool.
    const forInsert = await stack.client.listGrants({ resource: "data.insert" }, admin());
    expect(forInsert.grants.map((g) => g.id).sort()).toEqual(
      [created[1], glob.grant?.id, group.grant?.id].sort(),
    );
    const byPattern = await stack.client.listGrants({ resource: "data.*" }, admin());
    expect(byPattern.grants.map((g) => g.id)).toEqual([glob.grant?.id]);
  });

  it("never shows secrets or hashes, and hides revoked keys unless asked", async () => {
    const key = await agentKey("listed-agent");
    await stack.client.revokeApiKey({ id: key.apiKey?.id ?? "" }, admin());
    const visible = await stack.client.listApiKeys({ agentId: "listed-agent" }, admin());
    expect(visible.apiKeys).toEqual([]);
    const all = await stack.client.listApiKeys(
      { agentId: "listed-agent", includeRevoked: true },
      admin(),
    );
    expect(all.apiKeys).toHaveLength(1);
    expect(all.apiKeys[0]).toMatchObject({ id: key.apiKey?.id, revoked: true });
    const text = JSON.stringify(all, (_, v) => (typeof v === "bigint" ? String(v) : v));
    const secretPart = key.secret.split("_").slice(2).join("_");
    expect(text).not.toContain(secretPart);
    expect(text).not.toMatch(/salt|hash/i);
  });
});

describe("events", () => {
  it("publishes PermissionChanged and an ADMIN audit record after a write", async () => {
    const res = await stack.client.grant(
      {
        grant: spec({
          principal: { kind: PrincipalKind.AGENT, id: "evented" },
        }),
      },
      admin(),
    );
    const id = res.grant?.id ?? "";
    const jsm = await stack.nc.jetstreamManager();
    const changed = await jsm.streams.getMessage("TOOLMESH_CHANGES", {
      last_by_subj: subjects.permissionChanged("grant", id),
    });
    expect(fromBinary(PermissionChangedSchema, changed.data)).toMatchObject({
      type: ChangeType.PUT,
      kind: "grant",
      id,
      changedBy: "admin",
    });
    const audit = await jsm.streams.getMessage("TOOLMESH_AUDIT", {
      last_by_subj: subjects.audit("permission", "admin", ""),
    });
    const record = fromBinary(AuditRecordSchema, audit.data);
    expect(record.action).toBe(AuditAction.ADMIN);
    expect(record.reason).toContain(`created grant ${id}`);
  });
});

describe("logs", () => {
  it("never contain a token", async () => {
    expect(secrets.length).toBeGreaterThan(4);
    const output = await stack.logText("permission");
    expect(output).toContain("API key created");
    for (const secret of secrets) {
      expect(output).not.toContain(secret);
      expect(output).not.toContain(secret.split("_").slice(2).join("_"));
    }
  });
});
