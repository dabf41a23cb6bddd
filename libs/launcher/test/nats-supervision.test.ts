import { readFile } from "node:fs/promises";
import { DEFAULT_NATS_MEMORY_LIMIT } from "@toolmesh/launcher";
import { AuditAction, CallStatus } from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import type { TestStack } from "@toolmesh/testkit";
import { chainServices, echoTool, eventually, serveOnStack, startStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// nats-server dying under the launcher (kill -9 from outside, as the OOM killer would) is
// restarted with the same port, store and config; the services reconnect and ride through.
const echo = echoTool("supervised.echo", { idempotent: true });

let stack: TestStack;
let backend: ServedTools;

beforeAll(async () => {
  stack = await startStack({ services: chainServices });
  backend = await serveOnStack(stack, [echo]);
  await stack.grantAll("supervised-agent");
}, 120_000);
afterAll(async () => {
  await backend?.close();
  await stack?.stop();
});

describe("a nats-server killed under the launcher", () => {
  it("is restarted with its store; calls succeed again and nothing acked is lost", async () => {
    const agent = stack.as(await stack.agentToken("supervised-agent"));
    const dispatch = (text: string) =>
      stack.dispatcherClient().dispatch({ tool: "supervised.echo", arguments: { text } }, agent);
    const before: Awaited<ReturnType<typeof dispatch>>[] = [];
    for (let i = 0; i < 30; i++) before.push(await dispatch(`before-${i}`));
    expect(before.every((r) => r.status === CallStatus.SUCCESS)).toBe(true);

    const killed = stack.nats.pid;
    expect(killed).toBeGreaterThan(0);
    process.kill(killed, "SIGKILL");
    const restarted = await eventually(
      async () => {
        const pid = stack.nats.pid;
        if (pid === 0 || pid === killed) throw new Error("nats-server is not back yet");
        return pid;
      },
      20_000,
      "the launcher restarts nats-server",
    );
    expect(restarted).not.toBe(killed);
    // Counted where `toolmesh status` reads it, once it is back.
    await eventually(
      async () =>
        expect(stack.stackFile().processes["nats-server"]).toEqual({
          pid: restarted,
          restarts: 1,
          lastRestartAt: expect.any(String),
          lastExit: "signal SIGKILL",
        }),
      20_000,
      "stack.json to count the restart",
    );

    // The services reconnect on their own: a call may fail while the Dispatcher reconnects,
    // never for long.
    const after = await eventually(() => dispatch("after"), 20_000, "a call after the restart");
    expect(after.status).toBe(CallStatus.SUCCESS);
    expect(after.output).toEqual({ text: "after" });

    // Every record acked before the kill is still there: the audit service has chained every
    // call, the 30 before and the one after.
    const auditor = stack.as(await stack.agentToken("supervised-auditor", { roles: ["auditor"] }));
    await eventually(async () => {
      const res = await stack
        .auditClient()
        .queryRecords({ agentId: "supervised-agent", pageSize: 100 }, auditor);
      const calls = new Set(
        res.records.filter((r) => r.action === AuditAction.TOOL_CALL).map((r) => r.callId),
      );
      for (const r of [...before, after]) expect(calls.has(r.callId)).toBe(true);
    }, 20_000);
    const log = await stack.logText("dispatcher");
    expect(log).toContain("reconnected to NATS");
  }, 90_000);

  it("runs every nats-server it starts with the soft memory limit (GOMEMLIMIT)", async () => {
    // The restarted one above too: its environment is read from the process itself.
    const environ = await readFile(`/proc/${stack.nats.pid}/environ`, "utf8");
    expect(environ.split("\0")).toContain(`GOMEMLIMIT=${DEFAULT_NATS_MEMORY_LIMIT}`);
  });
});
