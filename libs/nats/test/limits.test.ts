import { createLogger } from "@toolmesh/log";
import { startTestBus, TEST_JS_OPTIONS, type TestBus } from "@toolmesh/testkit";
import { DiscardPolicy, type NatsConnection, RetentionPolicy } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyBucketLimits,
  bucketNames,
  defaultStreamSettings,
  ensureStream,
  jetStreamErrorCode,
  streamDefinitions,
  subjects,
} from "../src/index.js";

const log = createLogger("limits-test", "silent");

describe("stream definitions", () => {
  it("hold records as work (refused when full, never dropped) and drop the oldest of feeds", () => {
    const streams = streamDefinitions(defaultStreamSettings);
    for (const stream of Object.values(streams)) expect(stream.max_bytes).toBeGreaterThan(0);
    // Record batches stay until Audit has chained them and trims them: their size is its lag,
    // never age × rate (no age limit drops a batch not chained yet).
    expect(streams.records.retention).toBe(RetentionPolicy.Limits);
    expect(streams.records.discard).toBe(DiscardPolicy.New);
    expect(streams.records.max_age).toBe(0);
    // The broadcast feed keeps a broadcast only for the durables that have not read it.
    expect(streams.callback.retention).toBe(RetentionPolicy.Interest);
    // The broadcast feed and the change events only announce what is kept elsewhere.
    for (const key of ["callback", "changes"] as const) {
      expect(streams[key].discard).toBe(DiscardPolicy.Old);
      expect(streams[key].max_age).toBeGreaterThan(0);
    }
  });
});

describe("a full stream or bucket", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  beforeAll(async () => {
    bus = await startTestBus();
    nc = bus.nc;
  });
  afterAll(async () => {
    await bus?.destroy();
  });

  it("refuses the next record batch with a JetStream error and keeps every accepted one", async () => {
    const streams = streamDefinitions({
      ...defaultStreamSettings,
      maxBytes: { ...defaultStreamSettings.maxBytes, records: 64 * 1024 },
    });
    const jsm = await nc.jetstreamManager();
    await ensureStream(jsm, streams.records);
    const js = nc.jetstream(TEST_JS_OPTIONS);
    const record = new Uint8Array(1024);
    let accepted = 0;
    let refusal: unknown;
    for (let i = 0; i < 200 && refusal === undefined; i++) {
      try {
        await js.publish(subjects.records("dispatcher"), record, { msgID: `r${i}` });
        accepted++;
      } catch (error) {
        refusal = error;
      }
    }
    expect(accepted).toBeGreaterThan(10);
    expect(jetStreamErrorCode(refusal)).toBeDefined();
    const { state } = await jsm.streams.info("TOOLMESH_RECORDS");
    expect(state.first_seq).toBe(1);
    expect(state.messages).toBe(accepted);
  });

  it("applies the byte limit to the buckets a process owns, and a full bucket refuses writes", async () => {
    const kv = await nc.jetstream(TEST_JS_OPTIONS).views.kv(bucketNames.dispatcher, { history: 1 });
    const jsm = await nc.jetstreamManager();
    await applyBucketLimits({
      jsm,
      user: "dispatcher",
      maxBytes: { registry: 1, permission: 1, dispatcher: 32 * 1024 },
      log,
    });
    expect((await jsm.streams.info(`KV_${bucketNames.dispatcher}`)).config.max_bytes).toBe(
      32 * 1024,
    );
    let refusal: unknown;
    for (let i = 0; i < 100 && refusal === undefined; i++) {
      try {
        await kv.put(`idem.a.k${i}`, new Uint8Array(1024));
      } catch (error) {
        refusal = error;
      }
    }
    expect(refusal).toBeDefined();
    expect((await kv.get("idem.a.k0"))?.value.length).toBe(1024);
  });
});
