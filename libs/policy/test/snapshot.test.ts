import { toBinary } from "@bufbuild/protobuf";
import { createLogger } from "@toolmesh/log";
import { buckets, ReconnectingKvSnapshot } from "@toolmesh/nats";
import { GrantSchema } from "@toolmesh/proto";
import { startTestBus, type TestBus, tableGrant } from "@toolmesh/testkit";
import type { KV, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyNotReadyError, PolicySnapshot } from "../src/index.js";

const tool = { name: "data.query", requiredScopes: ["read:data"], groups: ["analytics"] };
const subject = { agentId: "a1", userId: "", roles: ["agent"] };

describe("PolicySnapshot over a real bucket", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  let kv: KV;
  let policy: ReturnType<typeof PolicySnapshot.owned>;

  beforeAll(async () => {
    bus = await startTestBus({ reconnect: true });
    nc = bus.nc;
    kv = await nc.jetstream().views.kv(buckets.permission.name);
  }, 30_000);
  afterAll(async () => {
    policy?.stop();
    await bus?.destroy();
  });

  const put = (id: string, who: string) =>
    kv.put(
      buckets.permission.grantKey(id),
      toBinary(
        GrantSchema,
        tableGrant({ id, who, on: "group:analytics", scopes: ["read:data"] }, Date.now()),
      ),
    );

  /** Resolves once the snapshot applied a change to the key. */
  const applied = (key: string) =>
    new Promise<void>((resolve) => {
      const off = policy.grants.onChange((c) => {
        if (c.key === key) {
          off();
          resolve();
        }
      });
    });

  it("fails closed before it is loaded, then decides from the bucket", async () => {
    await put("g1", "role:agent");
    policy = PolicySnapshot.owned(nc, kv, createLogger("test", "silent"));
    expect(policy.grants).toBeInstanceOf(ReconnectingKvSnapshot);
    expect(() => policy.decide(subject, tool)).toThrow(PolicyNotReadyError);
    await policy.start();
    expect(policy.decide(subject, tool)).toMatchObject({ allowed: true, matchedGrantIds: ["g1"] });

    const deleted = applied(buckets.permission.grantKey("g1"));
    await kv.delete(buckets.permission.grantKey("g1"));
    await deleted;
    expect(policy.decide(subject, tool).allowed).toBe(false);
  });

  it("follows the bucket across a NATS server restart", async () => {
    const reconnected = (async () => {
      for await (const s of nc.status()) if (s.type === "reconnect") return;
    })();
    await bus.nats.stop();
    await bus.nats.start();
    await reconnected;
    const seen = applied(buckets.permission.grantKey("g2"));
    await put("g2", "agent:a1");
    await seen;
    expect(policy.decide(subject, tool)).toMatchObject({ allowed: true, matchedGrantIds: ["g2"] });
  }, 20_000);
});
