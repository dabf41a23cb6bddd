import { CallStatus } from "@toolmesh/proto";
import {
  chainServices,
  eventually,
  metricSum,
  processRssMb,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const AGENTS = 40;
const PER_AGENT = 50;
const ROUNDS = 2;
/** The target: Callback's RSS after the watches closed, above where it started. */
const WITHIN_MB = 50;

// Callback's memory after Watch streams are opened and closed, on the stack npm start runs: 40
// agents open 50 watches each at once (2,000, half by call id, half by tool) and close them, twice.
// Without a collection when they end, V8 kept what they left until its own heuristics collected
// it, which took from 7 s to more than a minute: RSS 120 MB at start, 327 MB after the first round,
// 422 MB after the second, still 455 MB a minute later.
describe("watch memory", () => {
  let stack: TestStack;
  const rss = () => processRssMb(stack.service("callback").child.pid as number);
  /** Watches the service holds open, from its /metrics. */
  const openWatches = () => metricSum(stack.service("callback").url, "toolmesh_callback_watches");
  beforeAll(async () => {
    stack = await startStack({ services: [...chainServices, "callback"] });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it(`gives back what ${AGENTS * PER_AGENT} watches took once they are closed`, async () => {
    const client = stack.callbackClient();
    const tokens = await Promise.all(
      Array.from({ length: AGENTS }, (_, a) => stack.agentToken(`watch-agent-${a}`)),
    );
    const start = rss();
    const figures: string[] = [`start ${start.toFixed(0)} MB`];
    const after: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const abort = new AbortController();
      const streams: Promise<void>[] = [];
      for (const [a, token] of tokens.entries()) {
        const auth = { ...stack.as(token), signal: abort.signal };
        for (let w = 0; w < PER_AGENT; w++) {
          const stream =
            w % 2 === 0
              ? client.watch({ callId: `never-${round}-${a}-${w}` }, auth)
              : client.watch({ tool: "watched.tool", status: CallStatus.SUCCESS }, auth);
          streams.push(
            (async () => {
              for await (const _ of stream);
            })().catch(() => {}),
          );
        }
      }
      await eventually(
        async () => expect(await openWatches()).toBe(AGENTS * PER_AGENT),
        60_000,
        "every watch open",
      );
      const open = rss();
      abort.abort();
      await Promise.all(streams);
      await eventually(
        async () => expect(await openWatches()).toBe(0),
        30_000,
        "every watch closed",
      );
      const closedAt = Date.now();
      // A collection runs a second after a burst ends (the first within 5 s of the last closing),
      // and at most every 30 s.
      const back = await eventually(
        async () => {
          const now = rss();
          expect(now).toBeLessThanOrEqual(start + WITHIN_MB);
          return now;
        },
        round === 1 ? 5000 : 45_000,
        `Callback's RSS back within ${WITHIN_MB} MB of ${start.toFixed(0)} MB after round ${round}`,
      );
      after.push(back);
      figures.push(
        `round ${round}: ${open.toFixed(0)} MB open, ${back.toFixed(0)} MB ${((Date.now() - closedAt) / 1000).toFixed(1)} s after closing`,
      );
    }
    console.info(`Callback RSS: ${figures.join("; ")}`);
    expect(after.every((mb) => mb <= start + WITHIN_MB)).toBe(true);
  }, 240_000);
});
