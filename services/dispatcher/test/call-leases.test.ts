import { create, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { createLogger } from "@toolmesh/log";
import { ensureStream, JetStreamPublisher, streamDefinitions, subjects } from "@toolmesh/nats";
import { CallLeaseSchema } from "@toolmesh/proto";
import { startNats, type TestNats } from "@toolmesh/testkit";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamLeases, LEASE_STREAM } from "../src/records/call-leases.js";
import type { EventPublisher } from "../src/records/event-publisher.js";

const log = createLogger("call-leases-test", "silent");

// Leases of finished calls leave the stream in bulk purges, never below a lease still running or
// one whose ack was lost, and never pile up behind a long call.
describe("call leases in JetStream", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let publisher: JetStreamPublisher;
  let instanceCount = 0;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    await ensureStream(jsm, streamDefinitions().inflight);
    publisher = new JetStreamPublisher(nc, { ackTimeoutMs: 5000, whenDisconnected: "fail" });
  });

  afterAll(async () => {
    publisher?.close();
    await nc?.close();
    await nats?.destroy();
  });

  const lease = (instance: string, callId: string) =>
    create(CallLeaseSchema, {
      instance,
      callId,
      tool: "leases.test",
      agentId: "agent",
      deadline: timestampFromMs(Date.now() + 30_000),
    });
  /** Leases of one instance the stream still holds. */
  const stored = async (instance: string) => {
    const info = await jsm.streams.info(LEASE_STREAM, {
      subjects_filter: subjects.inflightOf(instance),
    });
    return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
  };
  const ledger = (settings: { maxLingering?: number } = {}, via: EventPublisher = publisher) => {
    const instance = `leases-${++instanceCount}`;
    // A long interval: the test purges when it wants to.
    return new JetStreamLeases(instance, via, jsm, log, { intervalMs: 3_600_000, ...settings });
  };

  it("purges every released lease in one go and leaves the running ones", async () => {
    const leases = ledger();
    const seqs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => leases.open(lease(leases.instance, `call-${i}`))),
    );
    expect(await stored(leases.instance)).toBe(50);
    for (const seq of seqs.slice(0, 40)) leases.release(seq);
    await leases.purge();
    // The first 40 are gone; the 10 still running stay.
    expect(await stored(leases.instance)).toBe(10);
    for (const seq of seqs.slice(40)) leases.release(seq);
    await leases.purge();
    expect(await stored(leases.instance)).toBe(0);
    expect(leases.unpurged).toBe(0);
    await leases.close();
  });

  it("keeps what a long call holds back, and deletes singly past the lingering bound", async () => {
    const leases = ledger({ maxLingering: 5 });
    const long = await leases.open(lease(leases.instance, "long"));
    const short = await Promise.all(
      Array.from({ length: 12 }, (_, i) => leases.open(lease(leases.instance, `short-${i}`))),
    );
    for (const seq of short) leases.release(seq);
    await leases.purge();
    // The long call and the five lingering behind it; the other seven were deleted at release.
    await expect.poll(() => stored(leases.instance)).toBe(6);
    expect(leases.unpurged).toBe(5);
    leases.release(long);
    await leases.purge();
    expect(await stored(leases.instance)).toBe(0);
    await leases.close();
  });

  it("never purges a lease whose ack was lost; the sweeper keeps it", async () => {
    let loseNext = false;
    // Stores the message, then reports a lost ack, as a timeout would.
    const lossy: EventPublisher = {
      get writable() {
        return publisher.writable;
      },
      get maxPayload() {
        return publisher.maxPayload;
      },
      get full() {
        return publisher.full;
      },
      publishMessage(subject, schema, value, options) {
        const acked = publisher.publishMessage(
          subject,
          schema,
          value as MessageShape<typeof schema>,
          options,
        );
        if (!loseNext) return acked;
        loseNext = false;
        return acked.then(() => Promise.reject(new Error("no ack in time")));
      },
    };
    const leases = ledger({}, lossy);
    const before = await leases.open(lease(leases.instance, "before"));
    loseNext = true;
    await expect(leases.open(lease(leases.instance, "lost-ack"))).rejects.toThrow("no ack");
    const after = await leases.open(lease(leases.instance, "after"));
    leases.release(before);
    leases.release(after);
    await leases.purge();
    const left = await jsm.streams.getMessage(LEASE_STREAM, {
      last_by_subj: subjects.inflight(leases.instance, "lost-ack"),
    });
    expect(left.seq).toBeGreaterThan(before);
    // Only what lies below the lost one went.
    expect(await stored(leases.instance)).toBe(2);
    await leases.close();
  });
});
