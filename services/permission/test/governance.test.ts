import { Code } from "@toolmesh/errors";
import {
  AuditAction,
  BudgetPeriod,
  BudgetSubject,
  PrincipalKind,
  RateLimitSubject,
} from "@toolmesh/proto";
import { failure, lastRecordWritten, mintJwt } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { grantSpec } from "./grant-spec.js";
import { startPermissionStack } from "./harness.js";

const stack = startedForFile(startPermissionStack);

const admin = () => stack.as(stack.adminToken);

/** The reason of the last ADMIN audit record. */
async function lastAdminReason(): Promise<string> {
  const jsm = await stack.nc.jetstreamManager();
  const record = await lastRecordWritten(jsm, "permission");
  expect(record.action).toBe(AuditAction.ADMIN);
  return record.reason;
}

const allow = (agent: string, scopes = ["read:data"]) =>
  grantSpec({ principal: { kind: PrincipalKind.AGENT, id: agent }, scopes });

describe("UpdateGrant", () => {
  it("replaces a grant at its revision, bumps it, audits it and decides by it at once", async () => {
    const created = (await stack.client.grant({ grant: allow("upd-1") }, admin())).grant;
    expect(created?.revision).toBe(1n);
    const id = created?.id ?? "";
    const check = async () =>
      (await stack.client.check({ agentId: "upd-1", tool: "data.query" }, admin())).decision;
    expect((await check())?.allowed).toBe(true);

    const disabled = { ...allow("upd-1"), enabled: false };
    const updated = (
      await stack.client.updateGrant(
        { grantId: id, grant: disabled, expectedRevision: 1n },
        admin(),
      )
    ).grant;
    expect(updated).toMatchObject({ id, revision: 2n, updatedBy: "admin", createdBy: "admin" });
    expect(updated?.spec?.enabled).toBe(false);
    expect((await check())?.allowed).toBe(false);
    expect(await lastAdminReason()).toContain(`updated grant ${id} to revision 2`);

    const listed = await stack.client.listGrants(
      { principal: { kind: PrincipalKind.AGENT, id: "upd-1" } },
      admin(),
    );
    expect(listed.grants.map((g) => [g.id, g.revision])).toEqual([[id, 2n]]);
  });

  it("refuses a stale revision with ABORTED naming the current one, and changes nothing", async () => {
    const id = (await stack.client.grant({ grant: allow("upd-2") }, admin())).grant?.id ?? "";
    await stack.client.updateGrant(
      { grantId: id, grant: allow("upd-2", ["*"]), expectedRevision: 1n },
      admin(),
    );
    const stale = await failure(
      stack.client.updateGrant(
        { grantId: id, grant: allow("upd-2", ["write:data"]), expectedRevision: 1n },
        admin(),
      ),
    );
    expect(stale.code).toBe(Code.Aborted);
    expect(stale.rawMessage).toContain("is at revision 2, not 1");
    const listed = await stack.client.listGrants(
      { principal: { kind: PrincipalKind.AGENT, id: "upd-2" } },
      admin(),
    );
    expect(listed.grants[0]?.spec?.scopes).toEqual(["*"]);
  });

  it("refuses an unknown grant, a bad spec and a non-admin", async () => {
    const unknown = await failure(
      stack.client.updateGrant(
        { grantId: "abcdef0123", grant: allow("x"), expectedRevision: 1n },
        admin(),
      ),
    );
    expect(unknown.code).toBe(Code.NotFound);
    const id = (await stack.client.grant({ grant: allow("upd-3") }, admin())).grant?.id ?? "";
    const bad = await failure(
      stack.client.updateGrant(
        { grantId: id, grant: { ...allow("upd-3"), scopes: [] }, expectedRevision: 1n },
        admin(),
      ),
    );
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).toContain("grant.scopes");
    const agent = await mintJwt(stack.jwtSecret, { sub: "upd-3", roles: ["agent"] });
    const denied = await failure(
      stack.client.updateGrant(
        { grantId: id, grant: allow("upd-3", ["*"]), expectedRevision: 1n },
        stack.as(agent),
      ),
    );
    expect(denied.code).toBe(Code.PermissionDenied);
  });
});

describe("rate limits", () => {
  it("puts, replaces, lists and deletes limits, each audited", async () => {
    const put = await stack.client.putRateLimit(
      {
        limit: {
          subject: RateLimitSubject.AGENT,
          target: "planner",
          requestsPerSecond: 5,
          burst: 10,
        },
      },
      admin(),
    );
    expect(put.limit?.id).toBe("agent.planner");
    expect(await lastAdminReason()).toContain(
      'created rate limit agent.planner: 5/s (burst 10) for agent "planner"',
    );
    await stack.client.putRateLimit(
      { limit: { subject: RateLimitSubject.AGENT, target: "planner", callsPerDay: 100 } },
      admin(),
    );
    expect(await lastAdminReason()).toContain("replaced rate limit agent.planner: 100 calls a day");
    await stack.client.putRateLimit(
      { limit: { subject: RateLimitSubject.TOOL, target: "data.query", requestsPerSecond: 1 } },
      admin(),
    );
    const listed = await stack.client.listRateLimits({}, admin());
    expect(listed.limits.map((l) => [l.id, l.spec?.callsPerDay])).toEqual([
      ["agent.planner", 100],
      ["tool.data=2Equery", 0],
    ]);
    await stack.client.deleteRateLimit({ id: "agent.planner" }, admin());
    expect(await lastAdminReason()).toContain("deleted rate limit agent.planner");
    const gone = await failure(stack.client.deleteRateLimit({ id: "agent.planner" }, admin()));
    expect(gone.code).toBe(Code.NotFound);
  });

  it.each([
    ["no subject", { target: "a" }, "limit.subject"],
    [
      "a bad tool name",
      { subject: RateLimitSubject.TOOL, target: "Bad Name", callsPerDay: 1 },
      "limit.target",
    ],
    [
      "a negative rate",
      { subject: RateLimitSubject.AGENT, target: "a", requestsPerSecond: -1 },
      "limit.requests_per_second",
    ],
    ["no limit at all", { subject: RateLimitSubject.AGENT, target: "a" }, "limits nothing"],
    [
      "a burst without a rate",
      { subject: RateLimitSubject.AGENT, target: "a", burst: 3, callsPerDay: 1 },
      "limit.burst",
    ],
  ])("refuses %s with INVALID_ARGUMENT", async (_name, limit, field) => {
    const error = await failure(stack.client.putRateLimit({ limit }, admin()));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain(field);
  });

  it("is admin only", async () => {
    const agent = await mintJwt(stack.jwtSecret, { sub: "planner", roles: ["agent"] });
    const denied = await failure(stack.client.listRateLimits({}, stack.as(agent)));
    expect(denied.code).toBe(Code.PermissionDenied);
  });
});

describe("budgets", () => {
  const daily = (target: string, limitMicros: bigint) => ({
    subject: BudgetSubject.AGENT,
    target,
    period: BudgetPeriod.DAY,
    currency: "USD",
    limitMicros,
  });

  it("puts, replaces, lists and deletes budgets, each audited", async () => {
    const put = await stack.client.putBudget({ budget: daily("planner", 5_000_000n) }, admin());
    expect(put.budget?.id).toBe("agent.planner.day");
    expect(put.budget?.updatedBy).toBe("admin");
    expect(await lastAdminReason()).toContain(
      'created budget agent.planner.day: 5 USD a day for agent "planner"',
    );
    await stack.client.putBudget({ budget: daily("planner", 2_500_000n) }, admin());
    expect(await lastAdminReason()).toContain("replaced budget agent.planner.day: 2.5 USD a day");
    await stack.client.putBudget(
      {
        budget: {
          subject: BudgetSubject.USER,
          target: "ann@example.com",
          period: BudgetPeriod.MONTH,
          currency: "CREDITS",
          limitMicros: 1n,
        },
      },
      admin(),
    );
    const listed = await stack.client.listBudgets({}, admin());
    expect(listed.budgets.map((b) => [b.id, b.spec?.limitMicros])).toEqual([
      ["agent.planner.day", 2_500_000n],
      ["user.ann=40example=2Ecom.month", 1n],
    ]);
    await stack.client.deleteBudget({ id: "agent.planner.day" }, admin());
    expect(await lastAdminReason()).toContain("deleted budget agent.planner.day");
    const gone = await failure(stack.client.deleteBudget({ id: "agent.planner.day" }, admin()));
    expect(gone.code).toBe(Code.NotFound);
    const bad = await failure(stack.client.deleteBudget({ id: "agent.planner" }, admin()));
    expect(bad.code).toBe(Code.InvalidArgument);
  });

  it.each([
    ["no subject", { target: "a", period: BudgetPeriod.DAY }, "budget.subject"],
    ["no period", { ...daily("a", 1n), period: BudgetPeriod.UNSPECIFIED }, "budget.period"],
    ["a lower-case currency", { ...daily("a", 1n), currency: "usd" }, "budget.currency"],
    ["no limit", daily("a", 0n), "budget.limit_micros"],
    [
      "a grant id that was never issued",
      { ...daily("a", 1n), subject: BudgetSubject.GRANT, target: "Not An Id" },
      "budget.target",
    ],
  ])("refuses %s with INVALID_ARGUMENT", async (_name, budget, field) => {
    const error = await failure(stack.client.putBudget({ budget }, admin()));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain(field);
  });

  it("is admin only", async () => {
    const agent = await mintJwt(stack.jwtSecret, { sub: "planner", roles: ["agent"] });
    const denied = await failure(stack.client.listBudgets({}, stack.as(agent)));
    expect(denied.code).toBe(Code.PermissionDenied);
    const put = await failure(
      stack.client.putBudget({ budget: daily("planner", 1n) }, stack.as(agent)),
    );
    expect(put.code).toBe(Code.PermissionDenied);
  });
});
