import { Code, ConnectError } from "@toolmesh/errors";
import {
  type CallbackEvent,
  CallbackService,
  CallStatus,
  PermissionService,
  RegistryService,
  type Tool,
  type ToolSpec,
} from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  allowSpec,
  chainServices,
  echoTool,
  eventually,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Two replicas of Registry, Permission and Callback against one NATS: each takes writes and
// answers reads for everything, whichever replica wrote it, and two writes that race are
// decided by the bucket (compare-and-set), never both applied.
describe("two replicas of each service", () => {
  let stack: TestStack;
  let served: ServedTools;
  let admin: { headers: { authorization: string } };

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback"],
      replicas: { registry: 2, permission: 2, callback: 2 },
    });
    admin = stack.as(stack.adminToken);
    served = await serveOnStack(stack, [echoTool("replicas.echo")]);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("lets exactly one of two racing updates through two Registries apply", async () => {
    const registries = ["registry", "registry-2"].map((name) =>
      stack.client(RegistryService, name),
    );
    for (let round = 0; round < 5; round++) {
      const { tool: found } = await (registries[round % 2] as (typeof registries)[number]).getTool(
        { name: "replicas.echo" },
        admin,
      );
      const tool = found as Tool;
      const outcomes = await Promise.allSettled(
        registries.map((registry, i) =>
          registry.updateTool(
            {
              tool: {
                ...(tool.spec as ToolSpec),
                description: `round ${round} through replica ${i + 1}`,
              },
              expectedRevision: tool.revision,
            },
            admin,
          ),
        ),
      );
      const applied = outcomes.filter((o) => o.status === "fulfilled");
      const refused = outcomes.filter((o) => o.status === "rejected");
      expect(applied).toHaveLength(1);
      expect(refused.map((o) => ConnectError.from(o.reason).code)).toEqual([Code.Aborted]);
      // Both replicas read the winner's revision: one more than before, not two.
      for (const registry of registries) {
        const now = await registry.getTool({ name: "replicas.echo" }, admin);
        expect(now.tool?.revision).toBe(tool.revision + 1n);
      }
    }
  });

  it("decides on one Permission replica with a grant made through the other", async () => {
    const [first, second] = ["permission", "permission-2"].map((name) =>
      stack.client(PermissionService, name),
    );
    const check = { agentId: "replica-agent", roles: ["agent"], tool: "replicas.echo" };
    expect((await first?.check(check, admin))?.decision?.allowed).toBe(false);
    await second?.grant(
      { grant: allowSpec("agent:replica-agent", "tool:replicas.echo", ["*"]) },
      admin,
    );
    await eventually(
      async () => expect((await first?.check(check, admin))?.decision?.allowed).toBe(true),
      10_000,
      "the grant to reach the other replica",
    );
  });

  it("answers Watch and GetOutcome on either Callback replica for any call", async () => {
    await stack.grantAll("watching-agent");
    const agent = stack.as(await stack.agentToken("watching-agent"));
    const callbacks = ["callback", "callback-2"].map((name) => stack.client(CallbackService, name));
    const seen: CallbackEvent[][] = [[], []];
    const watching = new AbortController();
    const watches = callbacks.map(async (callback, i) => {
      try {
        for await (const m of callback.watch(
          { agentId: "watching-agent", tool: "replicas.echo" },
          { ...agent, signal: watching.signal },
        )) {
          seen[i]?.push(m.event as CallbackEvent);
        }
      } catch (error) {
        if (!watching.signal.aborted) throw error;
      }
    });
    const callIds: string[] = [];
    await eventually(async () => {
      const res = await stack
        .dispatcherClient()
        .dispatch({ tool: "replicas.echo", arguments: { text: "hi" } }, agent);
      expect(res.status).toBe(CallStatus.SUCCESS);
      callIds.push(res.callId);
    }, 20_000);
    const last = callIds.at(-1) as string;
    // One Callback replica normalised the outcome; both stream it, both read it back.
    await eventually(async () => {
      for (const events of seen) expect(events.map((e) => e.callId)).toContain(last);
    }, 20_000);
    for (const callback of callbacks) {
      const got = await callback.getOutcome({ callId: last }, agent);
      expect(got.event?.status).toBe(CallStatus.SUCCESS);
      expect(got.event?.output).toEqual({ text: "hi" });
    }
    watching.abort();
    await Promise.all(watches);
  });
});
