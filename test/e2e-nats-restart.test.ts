import { Code } from "@toolmesh/errors";
import { CallStatus } from "@toolmesh/proto";
import { type ServedTools, serveTools, toolSpec } from "@toolmesh/sdk";
import { echoTool, retryWhile, startStack, type TestStack } from "@toolmesh/testkit";
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

describe("after a NATS restart", () => {
  it("the Dispatcher sees tools registered afterwards and still enforces grants", async () => {
    await stack.nats.stop();
    await stack.nats.start();
    const admin = stack.as(stack.adminToken);
    // The registry reconnects on its own; until then writes are UNAVAILABLE or INTERNAL.
    await retryWhile(
      () => stack.registryClient.registerTool({ tool: toolSpec(echo, backend.address) }, admin),
      [Code.Unavailable, Code.Internal, Code.DeadlineExceeded],
      15_000,
      "registering a tool",
    );
    const agent = stack.as(await stack.agentToken("agent-r"));
    const res = await retryWhile(
      () =>
        stack
          .dispatcherClient()
          .dispatch({ tool: "restart.echo", arguments: { text: "hi" } }, agent),
      [Code.NotFound, Code.Unavailable],
      5_000,
      "calling the tool registered after the restart",
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
