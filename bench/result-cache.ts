import { create } from "@bufbuild/protobuf";
import { PrincipalSchema, ToolSchema } from "@toolmesh/proto";
import { ResultCache } from "../services/dispatcher/src/chain/result-cache.js";

// npm run bench:cache: what the result cache costs a call of a cached tool in the Dispatcher, on
// its call path: the key (a SHA-256 of the user, the grants and the canonical arguments) and the
// look-up, for a hit; and for a miss, those and keeping the output. BENCH_CACHE_CALLS calls with
// arguments of about 100 bytes and outputs of about 1 KB; a tool without a cache skips it.
const calls = Number(process.env.BENCH_CACHE_CALLS ?? 200_000);
const tool = create(ToolSchema, {
  spec: { name: "bench.lookup", cacheTtlMs: 60_000, cacheMaxEntries: 100_000 },
  definitionHash: "d".repeat(64),
});
const principal = create(PrincipalSchema, { agentId: "bench", userId: "ann" });
const grants = ["0000000000000001", "0000000000000002"];
const output = { rows: Array.from({ length: 20 }, (_, i) => ({ id: i, name: `customer ${i}` })) };
const argsOf = (i: number) => ({
  customer_id: i % 1000,
  fields: ["name", "email", "plan"],
  q: "x",
});

function measure(label: string, run: (cache: ResultCache, i: number) => void): number {
  const cache = new ResultCache({ maxBytes: 256 * 1024 * 1024, maxEntries: 100_000 });
  // Every key cached first, so the measured look-ups are hits (or misses on new keys).
  for (let i = 0; i < 1000; i++) {
    const key = cache.keyOf(tool, argsOf(i), principal, grants);
    if (key) cache.put(tool, key, output, `call-${i}`);
  }
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) run(cache, i);
  const ns = Number(process.hrtime.bigint() - started) / calls;
  console.log(`${label.padEnd(34)} ${(ns / 1000).toFixed(2).padStart(6)} µs per call`);
  return ns;
}

console.log(`${calls} calls of a cached tool`);
for (const round of ["warm-up", "measured"]) {
  console.log(`-- ${round}`);
  measure("hit: key and look-up", (cache, i) => {
    const key = cache.keyOf(tool, argsOf(i), principal, grants);
    if (!key || !cache.get(tool, key)) throw new Error(`call ${i} missed`);
  });
  measure("miss: key, look-up and keep", (cache, i) => {
    const key = cache.keyOf(tool, { ...argsOf(i), n: i }, principal, grants);
    if (!key || cache.get(tool, key)) throw new Error(`call ${i} hit`);
    cache.put(tool, key, output, `call-${i}`);
  });
}
