import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { Effect, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { grantSpec, type SpecInit } from "./grant-spec.js";
import { startPermissionStack } from "./harness.js";

// What the Permission process refuses, field by field, and that a refused write stores nothing.
const stack = startedForFile(startPermissionStack);

const admin = () => stack.as(stack.adminToken);

describe("bad input", () => {
  const cases: [string, SpecInit | undefined, string][] = [
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
        stack.client.grant(overrides === undefined ? {} : { grant: grantSpec(overrides) }, admin()),
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
