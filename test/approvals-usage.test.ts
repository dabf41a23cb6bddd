import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import { bucketNames, busAccess } from "@toolmesh/nats";
import {
  ApprovalDecision,
  AuditAction,
  type CallbackEvent,
  CallStatus,
  type DispatchResponse,
  isFinal,
  StoredUsageSchema,
  type Usage,
} from "@toolmesh/proto";
import { startsCall } from "@toolmesh/records";
import { defineTool, type ServedTools, ToolError } from "@toolmesh/sdk";
import {
  chainServices,
  eventually,
  failure,
  logConsumed,
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
// when Callback is killed holding blocks it counted and did not ack.
describe("approvals and usage", () => {
  let stack: TestStack;
  let served: ServedTools;
  const ran: string[] = [];
  const tokens: Record<string, string> = {};
  const as = (who: string) => stack.as(tokens[who] ?? "");

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
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
  /** The call's final event, as Watch delivers it once the call ends (after its PENDING). */
  const ending = async (callId: string): Promise<CallbackEvent> => {
    for await (const { event } of stack.callbackClient().watch({ callId }, as("payer")))
      if (event && isFinal(event.status)) return event;
    throw new Error(`the watch of ${callId} ended without a final event`);
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
    // The run that followed is one record: Audit chains a call's start with its end.
    const records = await auditOf(held.callId, 3);
    expect(records.map((r) => [AuditAction[r.action], startsCall(r)])).toEqual([
      ["APPROVAL_REQUESTED", false],
      ["APPROVAL_DECIDED", false],
      ["TOOL_CALL", true],
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
    // Held, decided, and ended without running: its end record is REFUSED with no attempts.
    const records = await auditOf(held.callId, 3);
    expect(records[1]).toMatchObject({
      action: AuditAction.APPROVAL_DECIDED,
      status: CallStatus.REFUSED,
      errorCode: "approval_denied",
      decidedBy: "boss",
    });
    expect(records[2]).toMatchObject({
      action: AuditAction.TOOL_CALL,
      status: CallStatus.REFUSED,
      errorCode: "approval_denied",
      attempts: 0,
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
    const records = await auditOf(held.callId, 3);
    expect(records[1]).toMatchObject({
      action: AuditAction.APPROVAL_DECIDED,
      errorCode: "approval_expired",
      decidedBy: "",
    });
    expect(records[2]).toMatchObject({ action: AuditAction.TOOL_CALL, status: CallStatus.REFUSED });
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

  it("counts nothing twice when Callback is killed with blocks counted and not acked", async () => {
    const before = total(await meterUsage(1));
    const calls = await Promise.all(
      Array.from({ length: 5 }, () =>
        stack.dispatcherClient().dispatch({ tool: "meter.work", arguments: {} }, as("meter")),
      ),
    );
    expect(calls.every((c) => c.status === CallStatus.SUCCESS)).toBe(true);
    // Killed within the second its usage waits before it is written, or just after: its blocks
    // come again to the restarted service (after the ack wait), counted or not.
    await stack.service("callback").kill();
    await stack.service("callback").start();
    await logConsumed(await stack.nc.jetstreamManager(), busAccess.callback.durables.auditLog);
    const { usage } = await stack
      .callbackClient()
      .getUsage({ agentId: "meter", tool: "meter.work" }, stack.as(stack.adminToken));
    expect(total(usage)).toEqual({ ...before, calls: before.calls + 5n });
  }, 90_000);

  it("keeps counting into an hour an earlier version wrote, whatever sequence it remembered", async () => {
    const before = total(await meterUsage(1));
    // What a version that counted sent marks in order left: the last mark's sequence, far ahead.
    const kv = await stack.nc.jetstream().views.kv(bucketNames.usage);
    const keys = await kv.keys("hours.*.meter.*.meter=2Ework");
    const written: string[] = [];
    for await (const key of keys) written.push(key);
    const key = written.sort().at(-1) as string;
    const entry = await kv.get(key);
    const stored = fromBinary(StoredUsageSchema, entry?.value ?? new Uint8Array());
    await kv.put(
      key,
      toBinary(
        StoredUsageSchema,
        create(StoredUsageSchema, { usage: stored.usage, appliedSequence: 1_000_000_000n }),
      ),
    );
    await stack.dispatcherClient().dispatch({ tool: "meter.work", arguments: {} }, as("meter"));
    await stack.dispatcherClient().dispatch({ tool: "meter.sentinel" }, as("meter"));
    const after = total(await meterUsage(2));
    expect(after).toEqual({ ...before, calls: before.calls + 1n });
  }, 60_000);
});
