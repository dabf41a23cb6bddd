import { Code, ConnectError } from "@toolmesh/errors";
import { CallStatus } from "@toolmesh/proto";
import { type ServedTools, serveTools, toolSpec } from "@toolmesh/sdk";
import { echoTool, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The Dispatcher decides from snapshots fed by KV watches. After a NATS restart they must still
// follow changes, or the Dispatcher would answer from a frozen copy: a tool registered afterwards
// would stay NOT_FOUND forever, and a new grant would never apply.
const echo = echoTool("restart.echo", { idempotent: true });

let stack: TestStack;
let backend: ServedTools;

beforeAll(async () => {
  stack = await startStack();
  backend = await serveTools([echo], { port: 0 });
  await stack.grantAll("agent-r");
}, 120_000);
afterAll(async () => {
  await backend?.close();
  await stack?.stop();
});

/** Retries a call while it fails with one of the given codes, for at most timeoutMs. */
async function until<T>(call: () => Promise<T>, codes: Code[], timeoutMs: number): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (!codes.includes(code) || performance.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe("after a NATS restart", () => {
  it("the Dispatcher sees tools registered afterwards and still enforces grants", async () => {
    await stack.nats.stop();
    await stack.nats.start();
    const admin = stack.as(stack.adminToken);
    // The registry reconnects on its own; until then writes are UNAVAILABLE or INTERNAL.
    await until(
      () => stack.registryClient.registerTool({ tool: toolSpec(echo, backend.address) }, admin),
      [Code.Unavailable, Code.Internal, Code.DeadlineExceeded],
      15_000,
    );
    const agent = stack.as(await stack.agentToken("agent-r"));
    const res = await until(
      () =>
        stack
          .dispatcherClient()
          .dispatch({ tool: "restart.echo", arguments: { text: "hi" } }, agent),
      [Code.NotFound, Code.Unavailable],
      5_000,
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({ text: "hi" });

    const stranger = stack.as(await stack.agentToken("agent-without-grants"));
    await expect(
      stack
        .dispatcherClient()
        .dispatch({ tool: "restart.echo", arguments: { text: "x" } }, stranger),
    ).rejects.toMatchObject({ code: Code.PermissionDenied });
  });
});
