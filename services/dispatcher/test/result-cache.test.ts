import { create } from "@bufbuild/protobuf";
import { PrincipalSchema, type Tool, ToolSchema } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { ResultCache } from "../src/chain/result-cache.js";

const toolOf = (definitionHash: string, maxEntries = 0): Tool =>
  create(ToolSchema, {
    spec: { name: "t.lookup", cacheTtlMs: 1000, cacheMaxEntries: maxEntries },
    definitionHash,
  });
const ann = create(PrincipalSchema, { agentId: "a", userId: "ann" });

describe("ResultCache", () => {
  it("keys by user, grants and canonical arguments, and keeps a result for the TTL", () => {
    let now = 0;
    const cache = new ResultCache({ maxBytes: 1 << 20, maxEntries: 10 }, () => now);
    const tool = toolOf("d1");
    const key = cache.keyOf(tool, { b: 1, a: 2 }, ann, ["g2", "g1"]) ?? "";
    expect(cache.keyOf(tool, { a: 2, b: 1 }, ann, ["g1", "g2"])).toBe(key);
    expect(cache.keyOf(tool, { a: 2, b: 1 }, ann, ["g1"])).not.toBe(key);
    const bob = create(PrincipalSchema, { agentId: "a", userId: "bob" });
    expect(cache.keyOf(tool, { a: 2, b: 1 }, bob, ["g1", "g2"])).not.toBe(key);
    expect(cache.keyOf(create(ToolSchema, { spec: { name: "x" } }), {}, ann, [])).toBeUndefined();

    cache.put(tool, key, { v: 1 }, "call-1");
    expect(cache.get(tool, key)?.callId).toBe("call-1");
    now = 1000;
    expect(cache.get(tool, key)).toBeUndefined();
    expect(cache.size.entries).toBe(0);
  });

  it("forgets a tool's results when its definition changes", () => {
    const cache = new ResultCache({ maxBytes: 1 << 20, maxEntries: 10 }, () => 0);
    cache.put(toolOf("d1"), "k", { v: 1 }, "call-1");
    expect(cache.get(toolOf("d2"), "k")).toBeUndefined();
    expect(cache.get(toolOf("d1"), "k")).toBeUndefined();
    expect(cache.size).toEqual({ entries: 0, bytes: 0 });
  });

  it("stays within its entries and bytes, least recently used first", () => {
    const cache = new ResultCache({ maxBytes: 2000, maxEntries: 10 }, () => 0);
    const tool = toolOf("d1", 2);
    cache.put(tool, "k1", { v: 1 }, "c1");
    cache.put(tool, "k2", { v: 2 }, "c2");
    expect(cache.get(tool, "k1")?.callId).toBe("c1");
    cache.put(tool, "k3", { v: 3 }, "c3");
    expect(cache.get(tool, "k2")).toBeUndefined();
    expect(cache.get(tool, "k1")?.callId).toBe("c1");

    const big = toolOf("d1", 100);
    for (let i = 0; i < 50; i++) cache.put(big, `b${i}`, { text: "x".repeat(200) }, `b${i}`);
    expect(cache.size.bytes).toBeLessThanOrEqual(2000);
    expect(cache.get(big, "b49")?.callId).toBe("b49");
    expect(cache.get(big, "b0")).toBeUndefined();
    // An output larger than the whole cache is never kept.
    cache.put(big, "huge", { text: "x".repeat(5000) }, "huge");
    expect(cache.get(big, "huge")).toBeUndefined();
  });
});
