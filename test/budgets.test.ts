import http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import {
  AuditAction,
  type AuditRecord,
  BudgetExceededSchema,
  BudgetPeriod,
  BudgetSubject,
  CallStatus,
  type DispatchResponse,
  PriceSchema,
  RetryInfoSchema,
  ToolSpecSchema,
} from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools, toolSpec } from "@toolmesh/sdk";
import {
  chainServices,
  echoTool,
  eventually,
  failure,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const PER_CALL = 400_000n;
const PER_SECOND = 1_000_000n;
const LIMIT = 1_000_000n;
const DAY_MS = 24 * 60 * 60 * 1000;

// Costs and budgets against real processes: a priced tool's calls cost what its price says,
// recorded on their end records; a budget refuses the call its per-call price would take past
// the limit, with the budget, what is left and when it resets; the refusal is audited; usage
// shows the cost; and what Callback counted from the records is what every Dispatcher enforces.
describe("budgets", () => {
  let stack: TestStack;
  let served: ServedTools;
  let reporting: http.Server;
  const tokens: Record<string, string> = {};
  const as = (who: string) => stack.as(tokens[who] ?? "");
  const admin = () => stack.as(stack.adminToken);
  const call = (who: string, tool = "priced.echo") =>
    stack.dispatcherClient().dispatch({ tool, arguments: { text: "hi" } }, as(who));

  beforeAll(async () => {
    stack = await startStack({ services: [...chainServices, "callback"] });
    for (const agent of ["spender", "other", "restarted"]) {
      tokens[agent] = await stack.agentToken(agent);
      await stack.grantAll(agent);
    }
    const sdkPaid = defineTool({
      name: "sdk.paid",
      description: "Reports what it cost it.",
      inputSchema: { type: "object" },
      handler: (_args, ctx) => {
        ctx.reportCost(7000);
        return {};
      },
    });
    served = await serveTools([echoTool("priced.echo"), echoTool("free.echo"), sdkPaid], {
      port: 0,
    });
    const paidSpec = toolSpec(sdkPaid, served.address);
    paidSpec.price = create(PriceSchema, { currency: "CREDITS", perCallMicros: 1000n });
    await stack.registryClient.registerTool({ tool: paidSpec }, admin());
    const priced = create(ToolSpecSchema, toolSpec(echoTool("priced.echo"), served.address));
    priced.price = create(PriceSchema, {
      currency: "CREDITS",
      perCallMicros: PER_CALL,
      perSecondMicros: PER_SECOND,
    });
    await stack.registryClient.registerTool({ tool: priced }, admin());
    await stack.registryClient.registerTool(
      { tool: toolSpec(echoTool("free.echo"), served.address) },
      admin(),
    );
    // A remote tool that reports what each call cost it on top of its price.
    reporting = http.createServer((_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json", "toolmesh-cost-micros": "5000" })
        .end("{}"),
    );
    await new Promise<void>((resolve) => reporting.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(reporting.address() as AddressInfo).port}/`;
    await stack.registryClient.registerTool(
      {
        tool: {
          name: "reporting.paid",
          version: "1.0.0",
          description: "Reports its own cost.",
          inputSchema: { type: "object" },
          runtime: { kind: { case: "remote", value: { url } } },
          price: { currency: "CREDITS", perCallMicros: 1000n },
        },
      },
      admin(),
    );
    await eventually(() => call("other"));
  }, 120_000);

  afterAll(async () => {
    reporting?.close();
    await served?.close();
    await stack?.stop();
  });

  /**
   * Calls the priced tool until a call is refused RESOURCE_EXHAUSTED (the Dispatcher follows a
   * budget asynchronously): the calls that ran, and the refusal.
   */
  async function spendUntilRefused(agent: string) {
    const ran: DispatchResponse[] = [];
    const refused = await eventually(async () => {
      const error = await failure(
        call(agent).then((r) => {
          ran.push(r);
          return r;
        }),
      );
      expect(error.code).toBe(Code.ResourceExhausted);
      return error;
    }, 20_000);
    return { ran, refused };
  }

  /** Puts a CREDITS budget on an agent's calls. */
  const putBudget = (agent: string, period: BudgetPeriod, limitMicros: bigint) =>
    stack.permissionClient.putBudget(
      {
        budget: {
          subject: BudgetSubject.AGENT,
          target: agent,
          period,
          currency: "CREDITS",
          limitMicros,
          description: "a test budget",
        },
      },
      admin(),
    );

  /** What a call of the priced tool cost, from its reply. */
  const costOf = (r: DispatchResponse) => PER_CALL + (PER_SECOND * BigInt(r.durationMs)) / 1000n;

  /** Waits until usage shows the cost of an agent's calls of the priced tool. */
  const costInUsage = (agent: string, ran: DispatchResponse[]) =>
    eventually(async () => {
      const { usage } = await stack
        .callbackClient()
        .getUsage({ agentId: agent, tool: "priced.echo" }, admin());
      expect(usage.reduce((n, u) => n + (u.costMicros.CREDITS ?? 0n), 0n)).toBe(
        ran.reduce((n, r) => n + costOf(r), 0n),
      );
    }, 20_000);

  it("prices each call and refuses the one that would exceed the budget, audited", async () => {
    await putBudget("spender", BudgetPeriod.DAY, LIMIT);
    // The Dispatcher follows the budget asynchronously; the third call of 0.4 CREDITS or more
    // is refused once it applies.
    const { ran, refused } = await spendUntilRefused("spender");
    expect(ran.length).toBeGreaterThanOrEqual(2);
    for (const r of ran) {
      expect(r.status).toBe(CallStatus.SUCCESS);
      expect(r.cost).toMatchObject({ currency: "CREDITS", micros: costOf(r) });
    }
    const spent = ran.slice(-2).reduce((n, r) => n + costOf(r), 0n);
    const [detail] = refused.findDetails(BudgetExceededSchema);
    const resetsAt = Math.ceil(Date.now() / DAY_MS) * DAY_MS;
    expect(detail).toMatchObject({
      budgetId: "agent.spender.day",
      currency: "CREDITS",
      limitMicros: LIMIT,
      callMicros: PER_CALL,
    });
    expect(detail?.remainingMicros).toBeLessThan(PER_CALL);
    expect(detail?.remainingMicros).toBe(LIMIT - spent);
    expect(detail?.resetsAt && timestampMs(detail.resetsAt)).toBe(resetsAt);
    expect(refused.findDetails(RetryInfoSchema)).toHaveLength(1);
    expect(refused.rawMessage).toContain("budget agent.spender.day has");
    expect(refused.rawMessage).toContain("left of 1 CREDITS this day");

    // Another agent, and a tool with no price, are not held to the spender's budget.
    expect((await call("other")).status).toBe(CallStatus.SUCCESS);
    expect((await call("spender", "free.echo")).cost).toBeUndefined();

    // The refusal is audited, and the end records carry each call's cost and budget. (A call
    // that came before the Dispatcher had the spend against the new budget was refused
    // UNAVAILABLE, "snapshot not ready", and is audited too: the over-budget one is looked for.)
    const overBudget = (r: AuditRecord) =>
      r.status === CallStatus.REFUSED && r.errorCode === "RESOURCE_EXHAUSTED";
    const records = await eventually(async () => {
      const { records } = await stack
        .auditClient()
        .queryRecords({ agentId: "spender", tool: "priced.echo", pageSize: 1000 }, admin());
      expect(records.some(overBudget)).toBe(true);
      return records;
    });
    const refusal = records.find(overBudget);
    expect(refusal?.reason).toBe("over budget agent.spender.day");
    expect(refusal?.errorCode).toBe("RESOURCE_EXHAUSTED");
    const ends = records.filter(
      (r) => r.action === AuditAction.TOOL_CALL && r.status === CallStatus.SUCCESS,
    );
    expect(ends).toHaveLength(ran.length);
    // Calls that ran before the Dispatcher saw the budget count against none.
    const budgeted = ends.filter((end) => end.budgets.length > 0);
    expect(budgeted).toHaveLength(2);
    for (const end of budgeted) {
      expect(end.budgets).toEqual(["agent.spender.day"]);
      expect(end.countedBy).not.toBe("");
    }
    for (const end of ends) {
      expect(end.cost?.micros).toBe(PER_CALL + (PER_SECOND * BigInt(end.durationMs)) / 1000n);
    }

    // Usage shows the cost beside calls and time.
    await costInUsage("spender", ran);

    // A larger budget lets the call through again; the refusal held nothing back.
    await putBudget("spender", BudgetPeriod.DAY, LIMIT * 10n);
    await eventually(async () => expect((await call("spender")).status).toBe(CallStatus.SUCCESS));
  });

  it("adds what a tool reports it cost to its price", async () => {
    const reply = await eventually(() => call("other", "reporting.paid"));
    expect(reply.status).toBe(CallStatus.SUCCESS);
    expect(reply.cost).toMatchObject({ currency: "CREDITS", micros: 6000n, reportedMicros: 5000n });
    const sdk = await eventually(() => call("other", "sdk.paid"));
    expect(sdk.cost).toMatchObject({ currency: "CREDITS", micros: 8000n, reportedMicros: 7000n });
  });

  it("enforces what Callback counted from the records after a Dispatcher restarts", async () => {
    await putBudget("restarted", BudgetPeriod.MONTH, LIMIT);
    const { ran } = await spendUntilRefused("restarted");
    // Calls that ran before the Dispatcher saw the budget count against none.
    const spent = ran.slice(-2).reduce((n, r) => n + costOf(r), 0n);
    // Once Callback has counted the calls, a new Dispatcher process (which counted nothing
    // itself) refuses the next call from the spend alone.
    await costInUsage("restarted", ran);
    await stack.restartDispatcher();
    const refused = await eventually(async () => {
      const error = await failure(call("restarted"));
      expect(error.code).toBe(Code.ResourceExhausted);
      return error;
    }, 20_000);
    const [detail] = refused.findDetails(BudgetExceededSchema);
    expect(detail?.budgetId).toBe("agent.restarted.month");
    expect(detail?.remainingMicros).toBe(LIMIT - spent);
  });
});
