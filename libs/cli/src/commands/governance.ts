import {
  type Approval,
  ApprovalDecision,
  ApprovalSchema,
  CallbackService,
  CallStatus,
  DecideApprovalResponseSchema,
  DispatcherService,
  formatCosts,
  type Usage,
  UsageSchema,
} from "@toolmesh/proto";
import {
  allPages,
  enumName,
  flag,
  type Group,
  isoTime,
  jsonOf,
  type Leaf,
  when,
} from "../command.js";
import type { CliContext } from "../context.js";
import { statusColour } from "../output.js";

/** `toolmesh approvals approve|deny <call_id>`: one decision on a held call. */
function decide(decision: ApprovalDecision): Leaf {
  const verb = decision === ApprovalDecision.APPROVE ? "approve" : "deny";
  return {
    summary:
      decision === ApprovalDecision.APPROVE
        ? "approve a held call: it runs now, and its outcome is printed"
        : "deny a held call: it ends REFUSED approval_denied with your reason",
    usage: `approvals ${verb} <call_id> [--reason TEXT]`,
    details: [
      "Needs the role admin, a role in the Dispatcher's TOOLMESH_APPROVER_ROLES, or one the tool",
      "names in approver_roles; nobody decides a call their own agent made.",
      `Example: toolmesh approvals ${verb} tm-0aa2… --reason "checked the recipient"`,
    ],
    args: [1, 1],
    options: { reason: { type: "string" } },
    async run(ctx, [callId], flags) {
      const res = await ctx
        .client("dispatcher", DispatcherService)
        .decideApproval(
          { callId: callId ?? "", decision, reason: flag(flags, "reason") ?? "" },
          ctx.auth(),
        );
      const result = res.result;
      const status = enumName(CallStatus, result?.status ?? CallStatus.UNSPECIFIED);
      ctx.out.result(jsonOf(DecideApprovalResponseSchema, res), () => {
        ctx.out.note(
          `${verb === "approve" ? "approved" : "denied"} ${callId}: ${ctx.out.paint(statusColour(status), status)} ${res.approval?.tool ?? ""} in ${result?.durationMs ?? 0} ms`,
        );
        if (result?.error) ctx.out.note(`${result.error.code}: ${result.error.message}`);
        else if (result?.output) ctx.out.line(JSON.stringify(result.output, null, 2));
      });
      return decision === ApprovalDecision.DENY || result?.status === CallStatus.SUCCESS ? 0 : 1;
    },
  };
}

/** `toolmesh approvals …`: calls held for approval. */
export const approvals: Group = {
  summary: "list, approve and deny calls held for approval",
  sub: {
    ls: {
      summary: "the held calls you may decide (or made), oldest first",
      usage: "approvals ls [--tool NAME] [--agent ID]",
      options: { tool: { type: "string" }, agent: { type: "string" } },
      async run(ctx, _args, flags) {
        const held = await allPages<Approval>(async (pageToken) => {
          const res = await ctx.client("dispatcher", DispatcherService).listApprovals(
            {
              tool: flag(flags, "tool") ?? "",
              agentId: flag(flags, "agent") ?? "",
              pageSize: 500,
              pageToken,
            },
            ctx.auth(),
          );
          return { items: res.approvals, next: res.nextPageToken };
        });
        ctx.out.result(
          held.map((a) => jsonOf(ApprovalSchema, a)),
          () =>
            ctx.out.table(
              ["CALL", "TOOL", "AGENT", "USER", "REQUESTED", "EXPIRES", "REQUIRED BY", "ARGUMENTS"],
              held.map((a) => [
                a.callId,
                a.tool,
                a.agentId,
                a.userId || "-",
                when(a.requestedAt),
                when(a.expiresAt),
                a.requiredBy.join(","),
                JSON.stringify(a.arguments ?? {}),
              ]),
            ),
        );
        return 0;
      },
    },
    approve: decide(ApprovalDecision.APPROVE),
    deny: decide(ApprovalDecision.DENY),
  },
};

/** `toolmesh usage`: hourly calls, errors, execution time and cost. */
export const usage: Leaf = {
  summary: "hourly calls, errors, execution time and cost per agent, user and tool",
  usage: "usage [--agent ID] [--user ID] [--tool NAME] [--since ISO] [--until ISO]",
  details: [
    "Admins and auditors see every agent; anyone else their own agent's usage.",
    "--since and --until are rounded down to the hour; --until is the first hour left out.",
    "COST is what the calls of priced tools cost, per currency (- for none).",
  ],
  options: {
    agent: { type: "string" },
    user: { type: "string" },
    tool: { type: "string" },
    since: { type: "string" },
    until: { type: "string" },
  },
  async run(ctx: CliContext, _args, flags) {
    const rows = await allPages<Usage>(async (pageToken) => {
      const res = await ctx.client("callback", CallbackService).getUsage(
        {
          agentId: flag(flags, "agent") ?? "",
          userId: flag(flags, "user") ?? "",
          tool: flag(flags, "tool") ?? "",
          startHour: isoTime(flag(flags, "since"), "since"),
          endHour: isoTime(flag(flags, "until"), "until"),
          pageSize: 1000,
          pageToken,
        },
        ctx.auth(),
      );
      return { items: res.usage, next: res.nextPageToken };
    });
    ctx.out.result(
      rows.map((u) => jsonOf(UsageSchema, u)),
      () =>
        ctx.out.table(
          [
            "HOUR",
            "AGENT",
            "USER",
            "TOOL",
            "CALLS",
            "ERRORS",
            "FAILED",
            "INTERRUPTED",
            "REFUSED",
            "EXEC MS",
            "COST",
          ],
          rows.map((u) => [
            when(u.hour),
            u.agentId,
            u.userId || "-",
            u.tool,
            String(u.calls),
            String(u.errors),
            String(u.failures),
            String(u.interrupted),
            String(u.refused),
            String(u.durationMs),
            formatCosts(u.costMicros),
          ]),
        ),
    );
    return 0;
  },
};
