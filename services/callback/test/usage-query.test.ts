import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { principal, Role } from "@toolmesh/auth";
import { Code } from "@toolmesh/errors";
import { CallbackEventSchema, CallStatus, GetUsageRequestSchema } from "@toolmesh/proto";
import { failure, startNats, TEST_JS_OPTIONS, type TestNats } from "@toolmesh/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getUsage } from "../src/usage-query.js";
import { countedCall, hourOf, UsageStore, usageKey } from "../src/usage-store.js";

/**
 * GetUsage over a real usage bucket: pages in hour order, and a page token holds only for the
 * filter it was issued for; an oversized or garbage one is INVALID_ARGUMENT with the message every
 * list RPC gives.
 */
describe("GetUsage pages", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let store: UsageStore;
  const admin = principal("ops", [Role.Admin]);
  const hourMs = hourOf(Date.now());
  // The longest key there can be: ids at their limit, every character escaped (`~` is `=7E`).
  const longest = "~".repeat(128);
  const agents = [longest, "meter-a", "meter-b", "meter.c"];
  const query = (fields: Parameters<typeof create<typeof GetUsageRequestSchema>>[1]) =>
    getUsage(store, admin, create(GetUsageRequestSchema, fields));

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    store = await UsageStore.open(nc.jetstream(TEST_JS_OPTIONS), await nc.jetstreamManager(), {
      replicas: 1,
      ttlMs: 60 * 60 * 1000,
      maxBytes: 1024 * 1024,
    });
    for (const [i, agentId] of agents.entries()) {
      const event = create(CallbackEventSchema, {
        callId: `call-${i}`,
        agentId,
        tool: "usage.tool",
        status: CallStatus.SUCCESS,
        durationMs: 5,
        time: timestampFromMs(hourMs + 1000),
      });
      const userId = agentId === longest ? longest : "";
      event.userId = userId;
      await store.add(
        usageKey(hourMs, agentId, userId, "usage.tool"),
        [{ seq: i + 1, calls: [countedCall(event)] }],
        0,
      );
    }
  });

  afterAll(async () => {
    await nc?.close();
    await nats?.destroy();
  });

  it("reads every row a page at a time, each once", async () => {
    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await query({ tool: "usage.tool", pageSize: 1, pageToken });
      expect(page.usage.length).toBe(1);
      seen.push(...page.usage.map((u) => u.agentId));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(seen).toEqual(agents);
  });

  it("refuses a token reused with other filters, an oversized token and a garbage one", async () => {
    const first = await query({ tool: "usage.tool", pageSize: 1 });
    expect(first.nextPageToken).not.toBe("");
    const otherFilter = await failure(
      query({
        tool: "usage.tool",
        agentId: "meter-b",
        pageSize: 1,
        pageToken: first.nextPageToken,
      }),
    );
    expect(otherFilter.code).toBe(Code.InvalidArgument);
    expect(otherFilter.rawMessage).toContain("page_token: was issued for different filters");
    for (const pageToken of [
      "A".repeat(100_000),
      "not a token!",
      Buffer.from(JSON.stringify({ p: "hours.x", f: "y" })).toString("base64url"),
    ]) {
      const bad = await failure(query({ tool: "usage.tool", pageToken }));
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(bad.rawMessage).toContain("page_token: malformed page token");
    }
  });
});
