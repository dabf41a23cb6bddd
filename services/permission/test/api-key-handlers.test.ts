import { type MessageInitShape, toJsonString } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import {
  ApiKeyRecordSchema,
  ChangeType,
  ListApiKeysResponseSchema,
  type PermissionService,
} from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { freshForEachTest } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { grantSpec } from "./grant-spec.js";
import { expectBadField, permissionHandlers } from "./permission-handlers.js";

// CreateApiKey, RevokeApiKey and ListApiKeys over in-memory dependencies, and the roles and
// credentials every admin RPC needs.
const t = freshForEachTest(permissionHandlers);

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
