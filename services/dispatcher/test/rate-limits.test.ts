import { create, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { buckets, type SnapshotChange, type SnapshotView } from "@toolmesh/nats";
import { rateLimitId } from "@toolmesh/policy";
import { RateLimitSchema, type RateLimitSpecSchema, RateLimitSubject } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { CallLimiter } from "../src/catalog/rate-limits.js";

type Limit = MessageShape<typeof RateLimitSchema>;

/** An in-memory limits snapshot a test writes to, telling listeners as the bucket watch would. */
class Limits implements SnapshotView<typeof RateLimitSchema> {
  private readonly entries = new Map<string, Limit>();
  private readonly listeners = new Set<(c: SnapshotChange<Limit>) => void>();
  isReady = true;
  version = 0;
  get size() {
    return this.entries.size;
  }
  get(key: string) {
    return this.entries.get(key);
  }
  values() {
    return this.entries.values();
  }
  onChange(listener: (c: SnapshotChange<Limit>) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  put(
    spec: MessageInitShape<typeof RateLimitSpecSchema>,
    kind: "agent" | "tool" | "grant" | "user",
  ) {
    const value = create(RateLimitSchema, { id: rateLimitId(kind, spec.target ?? ""), spec });
    const key = buckets.permission.rateLimitKey(value.id);
    this.entries.set(key, value);
    for (const l of this.listeners) l({ key, value, revision: ++this.version });
  }
}

const call = (agentId: string, extra: { userId?: string; grantIds?: string[] } = {}) => ({
  agentId,
  userId: extra.userId ?? "",
  tool: "data.query",
  grantIds: extra.grantIds ?? [],
});

describe("CallLimiter", () => {
  it("lets a burst through, refuses the next with the wait until a token, and refills", () => {
    let now = 1_000_000;
    const limits = new Limits();
    limits.put(
      { subject: RateLimitSubject.AGENT, target: "a", requestsPerSecond: 2, burst: 3 },
      "agent",
    );
    const limiter = new CallLimiter(limits, 1, () => now);
    for (let i = 0; i < 3; i++) expect(limiter.admit(call("a"))).toBeUndefined();
    expect(limiter.admit(call("a"))).toEqual({
      limitId: "agent.a",
      kind: "rate",
      retryAfterMs: 500,
      allowed: 2,
    });
    expect(limiter.admit(call("b"))).toBeUndefined();
    now += 500;
    expect(limiter.admit(call("a"))).toBeUndefined();
    expect(limiter.admit(call("a"))?.kind).toBe("rate");
  });

  it("counts a daily quota per UTC day, and a refused call against no limit", () => {
    const day = 24 * 60 * 60 * 1000;
    let now = 10 * day + 1000;
    const limits = new Limits();
    limits.put({ subject: RateLimitSubject.TOOL, target: "data.query", callsPerDay: 2 }, "tool");
    limits.put(
      { subject: RateLimitSubject.GRANT, target: "abc", requestsPerSecond: 1, burst: 1 },
      "grant",
    );
    const limiter = new CallLimiter(limits, 1, () => now);
    expect(limiter.admit(call("a", { grantIds: ["abc"] }))).toBeUndefined();
    // Over the grant's bucket: refused, and the tool's quota is not charged for it.
    expect(limiter.admit(call("b", { grantIds: ["abc"] }))?.limitId).toBe("grant.abc");
    expect(limiter.admit(call("b"))).toBeUndefined();
    expect(limiter.admit(call("c"))).toEqual({
      limitId: "tool.data=2Equery",
      kind: "day",
      retryAfterMs: day - 1000,
      allowed: 2,
    });
    now += day;
    expect(limiter.admit(call("c"))).toBeUndefined();
  });

  it("enforces 1/n of the rate, burst and quota on each of n replicas", () => {
    const limits = new Limits();
    limits.put(
      {
        subject: RateLimitSubject.USER,
        target: "u",
        requestsPerSecond: 10,
        burst: 6,
        callsPerDay: 1000,
      },
      "user",
    );
    const limiter = new CallLimiter(limits, 3, () => 0);
    for (let i = 0; i < 2; i++) expect(limiter.admit(call("a", { userId: "u" }))).toBeUndefined();
    const over = limiter.admit(call("a", { userId: "u" }));
    expect(over?.limitId).toBe("user.u");
    expect(over?.allowed).toBeCloseTo(10 / 3);
  });

  it("starts a changed limit with a full bucket", () => {
    const limits = new Limits();
    const spec = {
      subject: RateLimitSubject.AGENT,
      target: "a",
      requestsPerSecond: 0.001,
      burst: 1,
    };
    limits.put(spec, "agent");
    const limiter = new CallLimiter(limits, 1, () => 0);
    expect(limiter.admit(call("a"))).toBeUndefined();
    expect(limiter.admit(call("a"))).toBeDefined();
    limits.put({ ...spec, burst: 2 }, "agent");
    expect(limiter.admit(call("a"))).toBeUndefined();
    expect(limiter.admit(call("a"))).toBeUndefined();
    expect(limiter.admit(call("a"))).toBeDefined();
  });
});
