import { fromBinary } from "@bufbuild/protobuf";
import { bucketNames } from "@toolmesh/nats";
import { CallStatus, StoredUsageSchema } from "@toolmesh/proto";
import { startNats, TEST_JS_OPTIONS, type TestNats } from "@toolmesh/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CountedCall, hourOf, UsageStore, usageKeyOf } from "../src/usage-store.js";

/**
 * Usage over a real bucket: a block of the audit log adds its calls once, whichever replica
 * counts it and in whatever order blocks come, and the blocks a key remembers are only those
 * above the consumer's ack floor.
 */
describe("usage counted by block", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let store: UsageStore;
  const call = (status: CallStatus, durationMs = 10): CountedCall => ({
    agentId: "meter",
    userId: "",
    tool: "meter.work",
    status,
    durationMs,
    hourMs: hourOf(Date.now()),
  });
  const key = usageKeyOf(call(CallStatus.SUCCESS));
  const stored = async () => {
    const kv = await nc.jetstream(TEST_JS_OPTIONS).views.kv(bucketNames.usage);
    const entry = await kv.get(key);
    return fromBinary(StoredUsageSchema, entry?.value ?? new Uint8Array());
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    store = await UsageStore.open(nc.jetstream(TEST_JS_OPTIONS), await nc.jetstreamManager(), {
      replicas: 1,
      ttlMs: 60 * 60 * 1000,
      maxBytes: 1024 * 1024,
    });
  });

  afterAll(async () => {
    await nc?.close();
    await nats?.destroy();
  });

  it("adds each block once, in any order and from two counters at once", async () => {
    const block = (seq: number, status = CallStatus.SUCCESS) => ({
      seq,
      calls: [call(status), call(CallStatus.FAILURE, 5)],
    });
    expect(await store.add(key, [block(7)], 0)).toHaveLength(2);
    // Block 5 comes after 7 (a redelivery behind newer blocks): still counted.
    expect(await store.add(key, [block(5)], 0)).toHaveLength(2);
    // 7 again, with 9 new, from two replicas racing for the key: 9 once, 7 not again.
    const [a, b] = await Promise.all([
      store.add(key, [block(7), block(9)], 0),
      store.add(key, [block(9)], 0),
    ]);
    expect((a?.length ?? 0) + (b?.length ?? 0)).toBe(2);
    const usage = (await stored()).usage;
    expect(usage).toMatchObject({ calls: 6n, failures: 3n, errors: 3n, durationMs: 45n });
    expect((await stored()).countedBlocks).toEqual([5n, 7n, 9n]);
  });

  it("forgets the blocks at or below the ack floor, which never come again", async () => {
    await store.add(key, [{ seq: 12, calls: [call(CallStatus.SUCCESS)] }], 7);
    expect((await stored()).countedBlocks).toEqual([9n, 12n]);
    expect((await stored()).usage?.calls).toBe(7n);
  });
});
