import { CallStatus, TraceEventKind } from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools, ToolError } from "@toolmesh/sdk";
import { chainServices, eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";

// A tool written with the TypeScript SDK that answers PENDING and finishes later: the SDK reports
// the outcome with the tool's own credential, and it reaches the caller, the trace and memory
// like any other outcome.
describe("asynchronous tools in the TypeScript SDK", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };
  const gates = new Map<string, () => void>();
  const gate = (label: string) =>
    new Promise<void>((resolve) => {
      gates.set(label, resolve);
    });

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
    });
    await stack.grantAll("async-agent");
    agent = stack.as(await stack.agentToken("async-agent"));
    const backendKey = await stack.permissionClient.createApiKey(
      { agentId: "render-backend", roles: ["tool-backend"], name: "the render tool's own key" },
      stack.as(stack.adminToken),
    );
    served = await serveTools(
      [
        defineTool({
          name: "jobs.render",
          description: "Renders a report; takes long, so it answers at once and reports later.",
          inputSchema: {
            type: "object",
            properties: { label: { type: "string" }, fail: { type: "boolean" } },
          },
          handler: (args: { label: string; fail?: boolean }, ctx) =>
            ctx.defer(async () => {
              await gate(args.label);
              if (args.fail) throw new ToolError("render_failed", `cannot render ${args.label}`);
              return { report: `report for ${args.label}` };
            }),
        }),
      ],
      {
        registry: { url: stack.registry.url, token: stack.adminToken },
        reports: {
          callbackUrl: stack.service("callback").url,
          token: backendKey.secret,
          agentId: "render-backend",
        },
      },
    );
  }, 120_000);

  afterAll(async () => {
    for (const open of gates.values()) open();
    await served?.close();
    await stack?.stop();
  });

  const outcomeOf = (callId: string) =>
    eventually(async () => {
      const { event } = await stack.callbackClient().getOutcome({ callId }, agent);
      expect(event?.status).not.toBe(CallStatus.PENDING);
      return event;
    }, 20_000);

  it("answers PENDING, then reports SUCCESS with the tool's own credential", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "jobs.render", arguments: { label: "q3" } }, agent);
    expect(res.status).toBe(CallStatus.PENDING);
    const pending = await eventually(() =>
      stack.callbackClient().getOutcome({ callId: res.callId }, agent),
    );
    expect(pending.event?.status).toBe(CallStatus.PENDING);
    await eventually(async () => expect(gates.has("q3")).toBe(true));
    gates.get("q3")?.();
    const event = await outcomeOf(res.callId);
    expect(event?.status).toBe(CallStatus.SUCCESS);
    expect(event?.output).toEqual({ report: "report for q3" });
    await eventually(async () => {
      const trace = await stack
        .auditClient()
        .getTrace(
          { traceId: res.traceId },
          stack.as(await stack.agentToken("async-auditor", { roles: ["auditor"] })),
        );
      expect(trace.events.map((e) => e.kind)).toContain(TraceEventKind.CALLBACK_SUCCESS);
      expect(await readAgentMemory(stack.dataDir, "async-agent")).toContain(
        `"${res.callId}/result"`,
      );
    }, 20_000);
  });

  it("reports a deferred failure as FAILURE with the tool's code", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "jobs.render", arguments: { label: "broken", fail: true } }, agent);
    expect(res.status).toBe(CallStatus.PENDING);
    await eventually(async () => expect(gates.has("broken")).toBe(true));
    gates.get("broken")?.();
    const event = await outcomeOf(res.callId);
    expect(event?.status).toBe(CallStatus.FAILURE);
    expect(event?.error).toMatchObject({ code: "render_failed", message: "cannot render broken" });
  });
});
