import { newCallId } from "@toolmesh/names";
import { startTestBus, type TestBus } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KvTaskIndex } from "../src/records/task-index.js";

// Which calls are whose MCP tasks, in the Dispatchers' bucket on a real nats-server: a caller
// lists its own tasks newest first, reading only as many as it lists, and finds one by its call
// id with one key read; another caller, or an id that is no key, finds nothing.
describe("the MCP task index", () => {
  let bus: TestBus;
  let index: KvTaskIndex;
  const alice = { agentId: "assistant", userId: "alice" };
  const bob = { agentId: "assistant", userId: "bob" };

  beforeAll(async () => {
    bus = await startTestBus();
    index = await KvTaskIndex.open(bus.nc, bus.jsm, {
      ttlMs: 60_000,
      replicas: 1,
      maxBytes: 1024 * 1024,
    });
  });

  afterAll(async () => {
    await bus?.destroy();
  });

  it("lists a caller's newest tasks first, at most the limit, and finds one by call id", async () => {
    const start = Date.now() - 1_000_000;
    const ids = Array.from({ length: 150 }, (_, i) => newCallId(start + i * 1000));
    // Indexed out of order: the list's order comes from the ids' times, not the writes'.
    for (const [i, callId] of [...ids.entries()].reverse())
      await index.add(alice, { callId, tool: "jobs.slow", createdMs: start + i * 1000 });
    await index.add(bob, { callId: newCallId(), tool: "jobs.slow", createdMs: Date.now() });

    const listed = await index.list(alice, 100);
    expect(listed.map((t) => t.callId)).toEqual(ids.slice(50).reverse());
    expect(await index.list(alice, 3)).toHaveLength(3);
    expect(await index.find(alice, ids[7] as string)).toEqual({
      callId: ids[7],
      tool: "jobs.slow",
      createdMs: start + 7000,
    });
    expect(await index.find(bob, ids[7] as string)).toBeUndefined();
    expect((await index.list(bob, 100)).map((t) => t.tool)).toEqual(["jobs.slow"]);
    // Wildcards and separators in an id are a key's characters, never a pattern.
    for (const hostile of ["*", ">", `${ids[0]}.>`, "", "a b"])
      expect(await index.find(alice, hostile)).toBeUndefined();
  });
});
