import { createLogger } from "@toolmesh/log";
import { startTestBus, TEST_JS_OPTIONS, type TestBus } from "@toolmesh/testkit";
import { DiscardPolicy, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyBucketLimits,
  bucketNames,
  defaultStreamSettings,
  ensureStream,
  jetStreamErrorCode,
  streamDefinitions,
} from "../src/index.js";

const log = createLogger("limits-test", "silent");

describe("stream definitions", () => {
  it("give every stream an age and a byte limit; call records are refused when full, never dropped", () => {
    const streams = streamDefinitions(defaultStreamSettings);
    for (const stream of Object.values(streams)) {
      expect(stream.max_age).toBeGreaterThan(0);
      expect(stream.max_bytes).toBeGreaterThan(0);
    }
    for (const key of ["trace", "audit", "outcome", "callback"] as const) {
      expect(streams[key].discard).toBe(DiscardPolicy.New);
    }
    // Change events only announce what the buckets hold: the oldest may go.
    expect(streams.changes.discard).toBe(DiscardPolicy.Old);
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

  it("refuses the next audit record with a JetStream error and keeps every accepted one", async () => {
    const streams = streamDefinitions({
      ...defaultStreamSettings,
      maxBytes: { ...defaultStreamSettings.maxBytes, audit: 64 * 1024 },
    });
    const jsm = await nc.jetstreamManager();
    await ensureStream(jsm, streams.audit);
    const js = nc.jetstream(TEST_JS_OPTIONS);
    const record = new Uint8Array(1024);
    let accepted = 0;
    let refusal: unknown;
    for (let i = 0; i < 200 && refusal === undefined; i++) {
      try {
        await js.publish("toolmesh.audit.dispatcher.agent.tool", record, { msgID: `r${i}` });
        accepted++;
      } catch (error) {
        refusal = error;
      }
    }
    expect(accepted).toBeGreaterThan(10);
    expect(jetStreamErrorCode(refusal)).toBeDefined();
    const { state } = await jsm.streams.info("TOOLMESH_AUDIT");
    expect(state.first_seq).toBe(1);
    expect(state.messages).toBe(accepted);
  });

  it("applies the byte limit to the buckets a process owns, and a full bucket refuses writes", async () => {
    const kv = await nc.jetstream(TEST_JS_OPTIONS).views.kv(bucketNames.dispatcher, { history: 1 });
    const jsm = await nc.jetstreamManager();
    await applyBucketLimits({
      jsm,
      user: "dispatcher",
      maxBytes: { registry: 1, permission: 1, dispatcher: 32 * 1024, callback: 1 },
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
