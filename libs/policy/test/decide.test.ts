import { create, fromBinary, isMessage, toBinary } from "@bufbuild/protobuf";
import { DecisionSchema, Effect, GrantSchema, PrincipalKind, ResourceKind } from "@toolmesh/proto";
import { decisionTable, tableGrant, tableTools } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";
import { compileGlob, decide, globProblem } from "../src/index.js";

const now = new Date("2026-06-01T12:00:00.000Z");

describe("decide() against the decision table", () => {
  it("has at least 40 cases", () => {
    expect(decisionTable.length).toBeGreaterThanOrEqual(40);
  });

  for (const c of decisionTable) {
    it(c.name, () => {
      const tool = tableTools.find((t) => t.name === c.tool);
      if (!tool) throw new Error(`unknown table tool ${c.tool}`);
      const grants = c.grants.map((g) => tableGrant(g, now.getTime()));
      const d = decide(
        { agentId: c.agent, userId: c.user ?? "", roles: c.roles ?? [] },
        tool,
        grants,
        now,
      );
      expect(d.allowed, d.reason).toBe(c.allowed);
      expect(d.reason).toMatch(/^[a-z].*"$|\)$/);
      if (c.missing) expect(d.missingScopes).toEqual(c.missing);
      if (c.deny) expect(d.denyGrantId).toBe(c.deny);
      if (c.denied) expect(d.deniedPrincipal).toBe(c.denied);
      if (c.matched) expect(d.matchedGrantIds).toEqual(c.matched);
      if (c.reason) expect(d.reason).toContain(c.reason);
      if (c.allowed) {
        expect(d.matchedGrantIds.length).toBeGreaterThan(0);
        expect(d.denyGrantId).toBe("");
      } else {
        expect(d.matchedGrantIds).toEqual([]);
        expect(d.deniedPrincipal).toMatch(/^(agent|user):/);
      }
    });
  }
});

describe("Decision message", () => {
  it("is a real DecisionSchema message that survives a binary round trip", () => {
    const c = decisionTable[0];
    if (!c) throw new Error("empty table");
    const d = decide(
      { agentId: c.agent, userId: "", roles: [] },
      tableTools[0] as (typeof tableTools)[0],
      c.grants.map((g) => tableGrant(g, now.getTime())),
      now,
    );
    expect(isMessage(d, DecisionSchema)).toBe(true);
    expect(fromBinary(DecisionSchema, toBinary(DecisionSchema, d))).toEqual(d);
  });
});

describe("expiry boundary", () => {
  const grant = tableGrant(
    { id: "g1", who: "agent:a1", on: "tool:t.x", scopes: ["*"], expiresInMs: 0 },
    now.getTime(),
  );
  const subject = { agentId: "a1", userId: "", roles: [] };
  const tool = { name: "t.x", requiredScopes: ["s"], groups: [] };
  it("is live one millisecond before expires_at", () => {
    expect(decide(subject, tool, [grant], new Date(now.getTime() - 1)).allowed).toBe(true);
  });
  it("is expired at exactly expires_at and after", () => {
    expect(decide(subject, tool, [grant], now).allowed).toBe(false);
    expect(decide(subject, tool, [grant], new Date(now.getTime() + 1)).allowed).toBe(false);
  });
});

describe("globs", () => {
  it.each([
    ["data.*", "data.query", true],
    ["data.*", "data.a.b", false],
    ["data.**", "data.a.b", true],
    ["data.**", "data", false],
    ["**", "x", true],
    ["*.send", "mail.send", true],
    ["data.q*", "data.query", true],
    ["data.q*", "data.xquery", false],
    ["data.query", "data_query", false],
    ["a-b.*", "a-b.c", true],
  ])("%s matches %s: %s", (pattern, name, expected) => {
    expect(compileGlob(pattern).test(name)).toBe(expected);
  });

  it.each([
    ["", "must not be empty"],
    ["data..x", "empty segment"],
    [".data", "empty segment"],
    ["Data.*", "lowercase"],
    ["data.***", "*** is not a glob"],
    ["data.(x)", "may contain only"],
    ["x".repeat(129), "at most 128"],
  ])("refuses %j", (pattern, problem) => {
    expect(globProblem(pattern)).toContain(problem);
  });

  it("accepts valid globs", () => {
    for (const p of ["data.*", "**", "*", "data.q*", "a_b-c.**"])
      expect(globProblem(p)).toBe(undefined);
  });
});

describe("grants that require approval", () => {
  const tool = { name: "pay.send", requiredScopes: ["pay:invoice"], groups: [] };
  const grant = (id: string, principal: PrincipalKind, who: string, requiresApproval: boolean) =>
    create(GrantSchema, {
      id,
      spec: {
        principal: { kind: principal, id: who },
        resource: { kind: ResourceKind.TOOL, pattern: "pay.send" },
        scopes: ["pay:invoice"],
        effect: Effect.ALLOW,
        enabled: true,
        requiresApproval,
      },
    });
  const agent = { agentId: "payer", userId: "", roles: [] };

  it("allows a call such a grant authorises, with approval", () => {
    const d = decide(agent, tool, [grant("g1", PrincipalKind.AGENT, "payer", true)], now);
    expect(d).toMatchObject({ allowed: true, requiresApproval: true, matchedGrantIds: ["g1"] });
    expect(d.reason).toContain("after approval");
  });

  it("needs no approval when another live grant allows the call outright", () => {
    const d = decide(
      agent,
      tool,
      [
        grant("g1", PrincipalKind.AGENT, "payer", true),
        grant("g2", PrincipalKind.AGENT, "*", false),
      ],
      now,
    );
    expect(d).toMatchObject({ allowed: true, requiresApproval: false, matchedGrantIds: ["g2"] });
  });

  it("requires approval when the user's side allows only with approval", () => {
    const d = decide(
      { agentId: "payer", userId: "alice", roles: [] },
      tool,
      [
        grant("g1", PrincipalKind.AGENT, "payer", false),
        grant("g2", PrincipalKind.USER, "alice", true),
      ],
      now,
    );
    expect(d).toMatchObject({ allowed: true, requiresApproval: true });
  });

  it("leaves a denied call denied", () => {
    const d = decide(
      { agentId: "x", userId: "", roles: [] },
      tool,
      [grant("g1", PrincipalKind.AGENT, "payer", true)],
      now,
    );
    expect(d).toMatchObject({ allowed: false, requiresApproval: false });
  });
});

describe("grants that require the caller's confirmation, and unlisted grants", () => {
  const tool = { name: "files.delete", requiredScopes: [], groups: [] };
  const grant = (
    id: string,
    fields: { requiresConfirmation?: boolean; requiresApproval?: boolean; unlisted?: boolean },
  ) =>
    create(GrantSchema, {
      id,
      spec: {
        principal: { kind: PrincipalKind.AGENT, id: "helper" },
        resource: { kind: ResourceKind.GLOB, pattern: "files.*" },
        scopes: ["*"],
        effect: Effect.ALLOW,
        enabled: true,
        ...fields,
      },
    });
  const agent = { agentId: "helper", userId: "", roles: [] };

  it("allows a call such a grant authorises, after the caller's confirmation", () => {
    const d = decide(agent, tool, [grant("g1", { requiresConfirmation: true })], now);
    expect(d).toMatchObject({
      allowed: true,
      requiresConfirmation: true,
      requiresApproval: false,
    });
    expect(d.reason).toContain("after the caller's confirmation");
  });

  it("needs both when the only grants need approval and confirmation", () => {
    const d = decide(
      agent,
      tool,
      [grant("g1", { requiresConfirmation: true, requiresApproval: true })],
      now,
    );
    expect(d).toMatchObject({ requiresConfirmation: true, requiresApproval: true });
    expect(d.reason).toContain("after approval and the caller's confirmation");
  });

  it("needs no confirmation when another live grant allows the call outright", () => {
    const d = decide(
      agent,
      tool,
      [grant("g1", { requiresConfirmation: true }), grant("g2", {})],
      now,
    );
    expect(d).toMatchObject({
      allowed: true,
      requiresConfirmation: false,
      matchedGrantIds: ["g2"],
    });
  });

  it("marks a tool allowed only through unlisted grants unlisted, and listed by any other", () => {
    expect(decide(agent, tool, [grant("g1", { unlisted: true })], now)).toMatchObject({
      allowed: true,
      unlisted: true,
    });
    expect(
      decide(agent, tool, [grant("g1", { unlisted: true }), grant("g2", {})], now),
    ).toMatchObject({ allowed: true, unlisted: false });
    expect(
      decide(agent, { ...tool, name: "mail.send" }, [grant("g1", { unlisted: true })], now),
    ).toMatchObject({ allowed: false, unlisted: false });
  });
});
