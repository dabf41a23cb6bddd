import { readWindow, subjects, type WindowMsg } from "@toolmesh/nats";
import { startTestBus, type TestBus } from "@toolmesh/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * readWindow reads one shard of a stream over a stretch of time with batched direct gets: every
 * message of the shard in order across batches, every source's under a wildcard, none before the
 * start or after the end, and it stops when the visitor has found what it wanted.
 */
describe("window reads", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  const callId = "tm-window-call";
  const shard = subjects.outcome("dispatcher", callId);
  const others = subjects.outcome("callback", callId);
  let marks: { beforeMs: number; middleMs: number };

  const read = async (options: Partial<Parameters<typeof readWindow>[0]>) => {
    const seen: WindowMsg[] = [];
    const visited = await readWindow({
      nc,
      stream: "TOOLMESH_OUTCOME",
      subject: subjects.outcomes(callId),
      fromMs: 0,
      batch: 100,
      visit: (msg) => {
        seen.push(msg);
        return false;
      },
      ...options,
    });
    return { seen, visited };
  };

  beforeAll(async () => {
    bus = await startTestBus({ streams: ["outcome"] });
    nc = bus.nc;
    const { js } = bus;
    const publish = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await js.publish(i % 3 === 0 ? others : shard, new TextEncoder().encode(String(i)));
        // Another shard's messages in between are skipped by nats-server, not read.
        await js.publish("toolmesh.outcome.dispatcher.zz", new Uint8Array([0]));
      }
    };
    const beforeMs = Date.now() - 1;
    await publish(0, 300);
    // nats-server stamps messages with its clock in ns; the next millisecond starts the second half.
    await new Promise((r) => setTimeout(r, 5));
    const middleMs = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    await publish(300, 450);
    marks = { beforeMs, middleMs };
  }, 60_000);

  afterAll(async () => {
    await bus?.destroy();
  });

  it("reads the whole shard in order, across batches and sources", async () => {
    const { seen, visited } = await read({ fromMs: marks.beforeMs });
    expect(visited).toBe(450);
    expect(seen.map((m) => Number(new TextDecoder().decode(m.data)))).toEqual(
      Array.from({ length: 450 }, (_, i) => i),
    );
    expect(new Set(seen.map((m) => m.subject))).toEqual(new Set([shard, others]));
    const seqs = seen.map((m) => m.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it("starts and ends by time", async () => {
    const first = await read({ fromMs: marks.beforeMs, untilMs: marks.middleMs });
    expect(first.visited).toBe(300);
    const second = await read({ fromMs: marks.middleMs });
    expect(second.visited).toBe(150);
    expect(Number(new TextDecoder().decode(second.seen[0]?.data))).toBe(300);
    const none = await read({ fromMs: Date.now() + 60_000 });
    expect(none.visited).toBe(0);
  });

  it("stops as soon as the visitor says so", async () => {
    const seen: number[] = [];
    const visited = await readWindow({
      nc,
      stream: "TOOLMESH_OUTCOME",
      subject: shard,
      fromMs: marks.beforeMs,
      batch: 100,
      visit: (msg) => {
        seen.push(Number(new TextDecoder().decode(msg.data)));
        return seen.length === 150;
      },
    });
    expect(visited).toBe(150);
    // The dispatcher subject alone: every number not divisible by 3.
    expect(seen.every((n) => n % 3 !== 0)).toBe(true);
  });
});
