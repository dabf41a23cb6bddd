import { stat } from "node:fs/promises";
import path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { API_KEY_HASH_ALGORITHM, mintApiKey } from "@toolmesh/auth";
import { Code } from "@toolmesh/errors";
import { buckets, subjects } from "@toolmesh/nats";
import {
  ApiKeyRecordSchema,
  AuditAction,
  ChangeType,
  PermissionChangedSchema,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { eventually, failure, lastRecordWritten, mintJwt, refusedJwts } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { beforeAll, describe, expect, it } from "vitest";
import { grantSpec } from "./grant-spec.js";
import { startPermissionStack } from "./harness.js";

const stack = startedForFile(startPermissionStack);
/** Every secret the test saw; none may appear in the service's output. */
const secrets: string[] = [];

beforeAll(() => {
  secrets.push(stack.adminToken, stack.serviceToken);
});

const admin = () => stack.as(stack.adminToken);

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
    const { expired: expiredJwt, wrongAudience } = await refusedJwts(stack.jwtSecret);
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
              grant: grantSpec({
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
        grant: grantSpec({
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

describe("listing", () => {
  it("filters grants by principal and by resource, and pages with validated tokens", async () => {
    const created: string[] = [];
    for (const pattern of ["data.query", "data.insert", "mail.send"]) {
      const res = await stack.client.grant(
        {
          grant: grantSpec({
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
        grant: grantSpec({
          principal: { kind: PrincipalKind.ROLE, id: "analyst" },
          resource: { kind: ResourceKind.GLOB, pattern: "data.*" },
        }),
      },
      admin(),
    );
    const group = await stack.client.grant(
      {
        grant: grantSpec({
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
        grant: grantSpec({
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
    const record = await lastRecordWritten(jsm, "permission");
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
