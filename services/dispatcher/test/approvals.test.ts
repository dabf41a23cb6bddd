import { clone, create } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import {
  ApprovalDecision,
  CallStatus,
  Effect,
  GrantSchema,
  PrincipalKind,
  ResourceKind,
  type Tool,
  ToolSchema,
} from "@toolmesh/proto";
import { as, failure } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { callResult } from "../src/transports/mcp/mcp-tools.js";
import { resultText } from "../src/transports/tool-calls/result-text.js";
import { startMemoryDispatcher } from "./memory-dispatcher.js";

// Human approval in-process: the Dispatcher's real server on port 0 with in-memory snapshots,
// records and held calls, and a real tool backend. test/approvals.test.ts runs the same against
// real processes, expiry included.
describe("approvals (in-process)", () => {
  const d = startedForFile(startMemoryDispatcher);
  let approver: string;
  let bystander: string;
  let counter: Tool;

  beforeAll(async () => {
    approver = await d.token("boss", ["agent", "payments-approver"]);
    bystander = await d.token("nosy", ["agent"]);
    counter = d.tools.get(buckets.registry.toolKey("test.counter")) as Tool;
  });
  beforeEach(() => {
    d.grantAll();
    d.backend.sideEffects.length = 0;
    const held = clone(ToolSchema, counter);
    if (held.spec) {
      held.spec.requiresApproval = true;
      held.spec.approverRoles = ["payments-approver"];
    }
    held.definitionHash = "def-1";
    d.tools.put(held);
  });

  const hold = async (label: string) => {
    const res = await d.client.dispatch(
      { tool: "test.counter", arguments: { label, password: "hunter2" } },
      as(d.tokens.agent),
    );
    expect(res.status).toBe(CallStatus.PENDING);
    return res;
  };
  const decide = (callId: string, decision: ApprovalDecision, token: string, reason = "") =>
    d.client.decideApproval({ callId, decision, reason }, as(token));

  it("holds the call without running it: PENDING awaiting_approval, its records, an expiry", async () => {
    const res = await hold("held");
    expect(res.error?.code).toBe("awaiting_approval");
    expect(res.error?.message).toContain(`call ${res.callId} is held until an approver decides`);
    expect(res.approvalExpiresAt).toBeDefined();
    expect(d.backend.sideEffects).toEqual([]);
    expect(d.recordsOf(res.callId)).toEqual(["APPROVAL_REQUESTED PENDING"]);
    // MCP and the model-reply dialects say it waits, with its call id, and is not an error.
    const mcp = callResult(undefined, res) as { content: { text: string }[]; isError?: boolean };
    expect(mcp.isError).toBeUndefined();
    expect(mcp.content[0]?.text).toContain(`awaiting approval (call_id ${res.callId})`);
    expect(resultText(res)).toContain(`awaiting approval (call_id ${res.callId})`);
  });

  it("lists held calls to approvers with redacted arguments; others see only their own", async () => {
    const res = await hold("listed");
    const seen = await d.client.listApprovals({ tool: "test.counter" }, as(approver));
    const mine = seen.approvals.find((a) => a.callId === res.callId);
    expect(mine).toMatchObject({ agentId: "agent-1", requiredBy: ["tool"] });
    expect(mine?.arguments).toEqual({ label: "listed", password: "[redacted]" });
    expect(mine?.approverRoles).toEqual(["approver", "payments-approver"]);
    const own = await d.client.listApprovals({}, as(d.tokens.agent));
    expect(own.approvals.map((a) => a.callId)).toContain(res.callId);
    const other = await d.client.listApprovals({}, as(bystander));
    expect(other.approvals).toEqual([]);
    const bad = await failure(d.client.listApprovals({ pageToken: "nope" }, as(approver)));
    expect(bad.code).toBe(Code.InvalidArgument);
  });

  it("pages held calls oldest first; a token fits only the filters it was issued for", async () => {
    const held = [await hold("page-1"), await hold("page-2"), await hold("page-3")];
    const ids = new Set(held.map((h) => h.callId));
    const seen: string[] = [];
    let pageToken = "";
    let firstToken = "";
    do {
      const page = await d.client.listApprovals(
        { tool: "test.counter", pageSize: 1, pageToken },
        as(approver),
      );
      expect(page.approvals.length).toBeLessThanOrEqual(1);
      seen.push(...page.approvals.map((a) => a.callId));
      pageToken = page.nextPageToken;
      firstToken ||= pageToken;
    } while (pageToken);
    expect(seen.filter((id) => ids.has(id))).toEqual(held.map((h) => h.callId));
    expect(new Set(seen).size).toBe(seen.length);

    const otherFilters = await failure(
      d.client.listApprovals({ agentId: "agent-1", pageToken: firstToken }, as(approver)),
    );
    expect(otherFilters.code).toBe(Code.InvalidArgument);
    expect(otherFilters.rawMessage).toContain("page_token: was issued for different filters");
    for (const pageToken of [
      "A".repeat(100_000),
      "not a token!",
      Buffer.from("[1,2]").toString("base64url"),
    ]) {
      const bad = await failure(d.client.listApprovals({ pageToken }, as(approver)));
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(bad.rawMessage).toContain("page_token: malformed page token");
    }
  });

  it("lets no one but an approver decide, and never the caller itself", async () => {
    const res = await hold("guarded");
    const self = await failure(decide(res.callId, ApprovalDecision.APPROVE, d.tokens.agent));
    expect(self.code).toBe(Code.PermissionDenied);
    expect(self.rawMessage).toContain("another approver must decide it");
    const nosy = await failure(decide(res.callId, ApprovalDecision.APPROVE, bystander));
    expect(nosy.code).toBe(Code.PermissionDenied);
    expect(nosy.rawMessage).toContain("needs the role admin or approver, payments-approver");
    const noDecision = await failure(decide(res.callId, ApprovalDecision.UNSPECIFIED, approver));
    expect(noDecision.code).toBe(Code.InvalidArgument);
    const unknown = await failure(decide("no-such-call", ApprovalDecision.APPROVE, approver));
    expect(unknown.code).toBe(Code.NotFound);
    expect(d.backend.sideEffects).toEqual([]);
  });

  it("runs an approved call through the rest of the chain, once", async () => {
    const res = await hold("approved");
    const decided = await decide(res.callId, ApprovalDecision.APPROVE, approver, "looks right");
    expect(decided.approval).toMatchObject({ decidedBy: "boss", reason: "looks right" });
    expect(decided.result).toMatchObject({ callId: res.callId, status: CallStatus.SUCCESS });
    expect(d.backend.sideEffects).toEqual(["approved start", "approved end"]);
    expect(d.recordsOf(res.callId)).toEqual([
      "APPROVAL_REQUESTED PENDING",
      "APPROVAL_DECIDED PENDING",
      "TOOL_START UNSPECIFIED",
      "TOOL_CALL SUCCESS",
    ]);
    // The hold is gone: a second decision finds nothing to decide.
    const again = await failure(decide(res.callId, ApprovalDecision.DENY, d.tokens.admin));
    expect(again.code).toBe(Code.NotFound);
  });

  it("ends a denied call REFUSED approval_denied with the approver's reason, without running it", async () => {
    const res = await hold("denied");
    const decided = await decide(res.callId, ApprovalDecision.DENY, d.tokens.admin, "wrong payee");
    expect(decided.result?.status).toBe(CallStatus.REFUSED);
    expect(decided.result?.error?.code).toBe("approval_denied");
    expect(decided.result?.error?.message).toContain("denied by ops: wrong payee");
    expect(d.backend.sideEffects).toEqual([]);
    expect(d.recordsOf(res.callId).slice(1)).toEqual([
      "APPROVAL_DECIDED REFUSED",
      "TOOL_CALL REFUSED",
    ]);
  });

  it("checks an approved call again: a revoked grant or a changed tool refuses it", async () => {
    const revoked = await hold("revoked");
    d.grants.delete(buckets.permission.grantKey("g-all"));
    const r1 = await decide(revoked.callId, ApprovalDecision.APPROVE, approver);
    expect(r1.result?.status).toBe(CallStatus.REFUSED);
    expect(r1.result?.error?.code).toBe("permission_revoked");

    d.grantAll();
    const changed = await hold("changed");
    const newer = clone(ToolSchema, d.tools.get(buckets.registry.toolKey("test.counter")) as Tool);
    newer.definitionHash = "def-2";
    d.tools.put(newer);
    const r2 = await decide(changed.callId, ApprovalDecision.APPROVE, approver);
    expect(r2.result?.error?.code).toBe("tool_changed");
    expect(d.backend.sideEffects).toEqual([]);
    expect(d.recordsOf(changed.callId).slice(1)).toEqual([
      "APPROVAL_DECIDED PENDING",
      "TOOL_REFUSED REFUSED",
      "TOOL_CALL REFUSED",
    ]);
  });

  it("holds a call a grant allows only with approval, unless another grant allows it outright", async () => {
    d.tools.put(counter);
    d.grants.delete(buckets.permission.grantKey("g-all"));
    const conditional = create(GrantSchema, {
      id: "g-cond",
      spec: {
        principal: { kind: PrincipalKind.AGENT, id: "agent-1" },
        resource: { kind: ResourceKind.TOOL, pattern: "test.counter" },
        scopes: ["*"],
        effect: Effect.ALLOW,
        enabled: true,
        requiresApproval: true,
      },
    });
    d.grants.put(buckets.permission.grantKey("g-cond"), conditional);
    const res = await d.client.dispatch(
      { tool: "test.counter", arguments: { label: "by-grant" } },
      as(d.tokens.agent),
    );
    expect(res.status).toBe(CallStatus.PENDING);
    const listed = await d.client.listApprovals({}, as(d.tokens.admin));
    expect(listed.approvals.find((a) => a.callId === res.callId)?.requiredBy).toEqual([
      "grant:g-cond",
    ]);
    d.grantAll();
    const outright = await d.client.dispatch(
      { tool: "test.counter", arguments: { label: "outright" } },
      as(d.tokens.agent),
    );
    expect(outright.status).toBe(CallStatus.SUCCESS);
    d.grants.delete(buckets.permission.grantKey("g-cond"));
  });
});
