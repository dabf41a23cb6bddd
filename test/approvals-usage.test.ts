import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import { bucketNames } from "@toolmesh/nats";
import {
  ApprovalDecision,
  AuditAction,
  type CallbackEvent,
  CallbackEventSchema,
  CallStatus,
  type DispatchResponse,
  type Usage,
} from "@toolmesh/proto";
import { defineTool, type ServedTools, ToolError } from "@toolmesh/sdk";
import {
  chainServices,
  eventually,
  failure,
  payTool,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** How long a call waits for its approver in this stack. */
const HOLD_MS = 8000;

// Human approval and metering against real processes: a held call is approved and completes,
// another is denied, a third expires; every step is in the audit log and Callback shows PENDING,
// then the end. Usage counted from the outcomes matches the calls made, each call once, also
// after the Callback service re-reads every sent mark.
describe("approvals and usage", () => {
  let stack: TestStack;
  let served: ServedTools;
  const ran: string[] = [];
  const tokens: Record<string, string> = {};
  const as = (who: string) => stack.as(tokens[who] ?? "");

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "audit", "callback"],
      serviceEnv: {
        dispatcher: {
          TOOLMESH_APPROVAL_TIMEOUT_MS: String(HOLD_MS),
          TOOLMESH_SWEEP_INTERVAL_MS: "250",
        },
      },
    });
    const tools = [
      payTool(ran),
      defineTool({
        name: "meter.work",
        description: "Works, or fails when asked to.",
        inputSchema: { type: "object", properties: { fail: { type: "boolean" } } },
        handler: (args: { fail?: boolean }) => {
          if (args.fail) throw new ToolError("asked_to_fail", "failed as asked");
          return { ok: true };
        },
      }),
      defineTool({
        name: "meter.sentinel",
        description: "Marks the end of a test's calls.",
        inputSchema: { type: "object" },
        handler: () => ({}),
      }),
    ];
    served = await serveOnStack(stack, tools, { requiresApproval: ["pay.send"] });
    for (const agent of ["payer", "meter", "other"]) {
      tokens[agent] = await stack.agentToken(agent);
      await stack.grantAll(agent);
    }
    // TOOLMESH_APPROVER_ROLES defaults to `approver`.
    tokens.boss = await stack.agentToken("boss", { roles: ["agent", "approver"] });
    await eventually(() =>
      stack.dispatcherClient().dispatch({ tool: "meter.sentinel" }, as("other")),
    );
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  const pay = async (invoice: string) => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "pay.send", arguments: { invoice } }, as("payer"));
    expect(res).toMatchObject({ status: CallStatus.PENDING, error: { code: "awaiting_approval" } });
    return res;
  };
  /** The call's final event, as Watch delivers it once the call ends. */
  const ending = async (callId: string): Promise<CallbackEvent> => {
    for await (const { event } of stack.callbackClient().watch({ callId }, as("payer")))
      if (event) return event;
    throw new Error(`the watch of ${callId} ended without an event`);
  };
  const auditOf = (callId: string, count: number) =>
    eventually(
      async () => {
        const { records } = await stack
          .auditClient()
          .queryRecords({ callId, pageSize: 20 }, stack.as(stack.adminToken));
        expect(records.length).toBe(count);
        return [...records].reverse();
      },
      20_000,
      `the audit records of ${callId}`,
    );

  it("holds a call until an approver approves it; it then runs once and completes", async () => {
    const held = await pay("inv-approved");
    expect(ran).not.toContain("inv-approved");
    const pending = await stack.callbackClient().getOutcome({ callId: held.callId }, as("payer"));
    expect(pending.event).toMatchObject({
      status: CallStatus.PENDING,
      reason: "awaiting_approval",
    });
    const listed = await stack.dispatcherClient().listApprovals({ tool: "pay.send" }, as("boss"));
    expect(listed.approvals.map((a) => a.callId)).toContain(held.callId);
    const self = await failure(
      stack
        .dispatcherClient()
        .decideApproval({ callId: held.callId, decision: ApprovalDecision.APPROVE }, as("payer")),
    );
    expect(self.code).toBe(Code.PermissionDenied);

    const end = ending(held.callId);
    const decided = await stack
      .dispatcherClient()
      .decideApproval(
        { callId: held.callId, decision: ApprovalDecision.APPROVE, reason: "invoice checked" },
        as("boss"),
      );
    expect(decided.result).toMatchObject({
      status: CallStatus.SUCCESS,
      output: { paid: "inv-approved" },
    });
    expect((await end).status).toBe(CallStatus.SUCCESS);
    expect(ran.filter((i) => i === "inv-approved")).toHaveLength(1);
    const records = await auditOf(held.callId, 3);
    expect(records.map((r) => AuditAction[r.action])).toEqual([
      "APPROVAL_REQUESTED",
      "APPROVAL_DECIDED",
      "TOOL_CALL",
    ]);
    expect(records[1]).toMatchObject({
      decidedBy: "boss",
      reason: "approved by boss: invoice checked",
    });
  });

  it("ends a denied call REFUSED approval_denied with the reason; the tool never runs", async () => {
    const held = await pay("inv-denied");
    const end = ending(held.callId);
    await stack
      .dispatcherClient()
      .decideApproval(
        { callId: held.callId, decision: ApprovalDecision.DENY, reason: "duplicate invoice" },
        as("boss"),
      );
    const event = await end;
    expect(event).toMatchObject({ status: CallStatus.REFUSED, reason: "approval_denied" });
    expect(event.error?.message).toContain("denied by boss: duplicate invoice");
    expect(ran).not.toContain("inv-denied");
    const records = await auditOf(held.callId, 2);
    expect(records[1]).toMatchObject({
      action: AuditAction.APPROVAL_DECIDED,
      status: CallStatus.REFUSED,
      errorCode: "approval_denied",
      decidedBy: "boss",
    });
  });

  it("ends a call nobody decided REFUSED approval_expired once its hold runs out", async () => {
    const held = await pay("inv-expired");
    const expiresMs = Number(held.approvalExpiresAt?.seconds ?? 0n) * 1000;
    expect(expiresMs).toBeGreaterThan(Date.now());
    const event = await ending(held.callId);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresMs);
    expect(event).toMatchObject({ status: CallStatus.REFUSED, reason: "approval_expired" });
    expect(ran).not.toContain("inv-expired");
    const late = await failure(
      stack
        .dispatcherClient()
        .decideApproval({ callId: held.callId, decision: ApprovalDecision.APPROVE }, as("boss")),
    );
    expect(late.code).toBe(Code.NotFound);
    const records = await auditOf(held.callId, 2);
    expect(records[1]).toMatchObject({
      action: AuditAction.APPROVAL_DECIDED,
      errorCode: "approval_expired",
      decidedBy: "",
    });
  }, 30_000);

  /** The meter agent's usage rows, once the sentinel call is counted (so everything before is). */
  const meterUsage = async (sentinels: number): Promise<Usage[]> => {
    await eventually(
      async () => {
        const { usage } = await stack
          .callbackClient()
          .getUsage({ agentId: "meter", tool: "meter.sentinel" }, stack.as(stack.adminToken));
        expect(usage.reduce((n, u) => n + u.calls, 0n)).toBe(BigInt(sentinels));
      },
      20_000,
      "the sentinel call counted",
    );
    const { usage } = await stack
      .callbackClient()
      .getUsage({ agentId: "meter", tool: "meter.work" }, stack.as(stack.adminToken));
    return usage;
  };
  const total = (rows: Usage[]) => ({
    calls: rows.reduce((n, u) => n + u.calls, 0n),
    errors: rows.reduce((n, u) => n + u.errors, 0n),
    failures: rows.reduce((n, u) => n + u.failures, 0n),
  });

  it("counts usage per agent, user and tool: each call once, errors and time included", async () => {
    const calls: Promise<DispatchResponse>[] = [];
    for (let i = 0; i < 12; i++)
      calls.push(
        stack
          .dispatcherClient()
          .dispatch({ tool: "meter.work", arguments: { fail: i % 4 === 0 } }, as("meter")),
      );
    const results = await Promise.all(calls);
    expect(results.filter((r) => r.status === CallStatus.FAILURE)).toHaveLength(3);
    await stack.dispatcherClient().dispatch({ tool: "meter.sentinel" }, as("meter"));
    const rows = await meterUsage(1);
    expect(total(rows)).toEqual({ calls: 12n, errors: 3n, failures: 3n });
    expect(rows[0]).toMatchObject({ agentId: "meter", userId: "", tool: "meter.work" });

    // The payer's held calls count when they end: one success, one denied, one expired.
    const { usage: paid } = await stack
      .callbackClient()
      .getUsage({ tool: "pay.send" }, stack.as(stack.adminToken));
    expect(paid.reduce((n, u) => n + u.refused, 0n)).toBe(2n);
    expect(paid.reduce((n, u) => n + u.calls, 0n)).toBe(3n);

    // An agent reads its own usage only.
    const own = await stack.callbackClient().getUsage({}, as("meter"));
    expect(new Set(own.usage.map((u) => u.agentId))).toEqual(new Set(["meter"]));
    const others = await failure(
      stack.callbackClient().getUsage({ agentId: "payer" }, as("meter")),
    );
    expect(others.code).toBe(Code.PermissionDenied);

    const metrics = await (await fetch(`${stack.service("callback").url}/metrics`)).text();
    expect(metrics).toContain(
      'toolmesh_usage_calls_total{agent="meter",tool="meter.work",status="failure"} 3',
    );
    expect(metrics).toContain(
      'toolmesh_usage_calls_total{agent="meter",tool="meter.work",status="success"} 9',
    );
  });

  it("counts nothing twice when Callback re-reads every broadcast mark after a restart", async () => {
    const before = total(await meterUsage(1));
    // Forget how far the counter read, so the restarted service reads every mark again.
    const kv = await stack.nc.jetstream().views.kv(bucketNames.usage);
    await kv.delete("checkpoint");
    await stack.restart("callback");
    await stack.dispatcherClient().dispatch({ tool: "meter.work", arguments: {} }, as("meter"));
    await stack.dispatcherClient().dispatch({ tool: "meter.sentinel" }, as("meter"));
    const after = total(await meterUsage(2));
    expect(after).toEqual({ ...before, calls: before.calls + 1n });
  }, 60_000);

  it("counts the separate sent marks that earlier versions wrote, so an upgrade loses no call", async () => {
    const before = total(await meterUsage(2));
    const kv = await stack.nc.jetstream().views.kv(bucketNames.callback);
    const sample = create(CallbackEventSchema, {
      callId: "before-upgrade",
      agentId: "meter",
      tool: "meter.work",
      status: CallStatus.FAILURE,
      error: { code: "backend_error" },
      time: timestampNow(),
    });
    await kv.put("sent.before-upgrade", toBinary(CallbackEventSchema, sample));
    await stack.dispatcherClient().dispatch({ tool: "meter.sentinel" }, as("meter"));
    const after = total(await meterUsage(3));
    expect(after).toEqual({
      calls: before.calls + 1n,
      errors: before.errors + 1n,
      failures: before.failures + 1n,
    });
  }, 60_000);
});
