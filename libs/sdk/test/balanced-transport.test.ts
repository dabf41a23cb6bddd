import { createClient } from "@connectrpc/connect";
import { CallStatus, DispatcherService } from "@toolmesh/proto";
import {
  echoTool,
  eventually,
  freePort,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBalancedTransport, type ServedTools } from "../src/index.js";

// Two Dispatchers behind no load balancer, as a deployment without one runs them: the client
// spreads calls over both and, once one is killed, every call goes to the other.
describe("a client over two Dispatchers", () => {
  let stack: TestStack;
  let served: ServedTools;

  beforeAll(async () => {
    stack = await startStack({ replicas: { dispatcher: 2 } });
    await stack.grantAll("balanced-agent");
    served = await serveOnStack(stack, [echoTool("balanced.echo")]);
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("balances over both, fails over when one is killed, and says so when none answers", async () => {
    const urls = [stack.service("dispatcher").url, stack.service("dispatcher-2").url];
    const client = createClient(DispatcherService, createBalancedTransport({ baseUrls: urls }));
    const as = stack.as(await stack.agentToken("balanced-agent"));
    const echo = async (text: string) => {
      const res = await client.dispatch({ tool: "balanced.echo", arguments: { text } }, as);
      expect(res.status).toBe(CallStatus.SUCCESS);
      expect(res.output).toEqual({ text });
    };
    // Both must know the tool before the count starts (their snapshots follow the registry).
    await eventually(async () => {
      await echo("warm");
      await echo("warm");
    }, 30_000);
    const before = await metricCount(urls);
    for (let i = 0; i < 10; i++) await echo(`both ${i}`);
    const after = await metricCount(urls);
    // Round robin: each Dispatcher ran half of them.
    expect(after.map((n, i) => n - (before[i] as number))).toEqual([5, 5]);

    await stack.service("dispatcher-2").kill();
    for (let i = 0; i < 20; i++) await echo(`one ${i}`);

    const none = createClient(
      DispatcherService,
      createBalancedTransport({ baseUrls: [`http://127.0.0.1:${await freePort()}`] }),
    );
    await expect(none.dispatch({ tool: "balanced.echo" }, as)).rejects.toThrow(/ECONNREFUSED/);
  }, 120_000);
});

/** The calls each Dispatcher ran, from its /metrics. */
async function metricCount(urls: string[]): Promise<number[]> {
  return Promise.all(
    urls.map(async (url) => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const line = text
        .split("\n")
        .find(
          (l) => l.startsWith("toolmesh_dispatcher_calls_total{") && l.includes("balanced.echo"),
        );
      return Number(line?.split(" ").at(-1) ?? 0);
    }),
  );
}
