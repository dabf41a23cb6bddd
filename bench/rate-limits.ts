import { create, type MessageShape } from "@bufbuild/protobuf";
import { buckets, type SnapshotView } from "@toolmesh/nats";
import { rateLimitId } from "@toolmesh/policy";
import { RateLimitSchema, RateLimitSubject } from "@toolmesh/proto";
import { CallLimiter } from "../services/dispatcher/src/catalog/rate-limits.js";

// npm run bench:limits: what a rate limit costs a call in the Dispatcher. The limiter's
// counters are local (no NATS write), so its cost is the CPU of admit(): measured here with
// BENCH_LIMITS limits loaded and four applying to every call (agent, user, tool, grant), against
// the same calls with none applying.
const limitsLoaded = Number(process.env.BENCH_LIMITS ?? 10_000);
const calls = Number(process.env.BENCH_LIMIT_CALLS ?? 2_000_000);
const agents = 64;

type Limit = MessageShape<typeof RateLimitSchema>;

/** An in-memory snapshot of limits, the shape the Dispatcher follows from the bucket. */
function snapshotOf(limits: Limit[]): SnapshotView<typeof RateLimitSchema> {
  const entries = new Map(limits.map((l) => [buckets.permission.rateLimitKey(l.id), l]));
  return {
    isReady: true,
    version: 1,
    size: entries.size,
    get: (key) => entries.get(key),
    values: () => entries.values(),
    onChange: () => () => {},
  };
}

function limit(
  subject: RateLimitSubject,
  kind: "agent" | "user" | "tool" | "grant",
  target: string,
): Limit {
  // Generous enough that every call passes: the cost measured is counting, not refusing.
  return create(RateLimitSchema, {
    id: rateLimitId(kind, target),
    spec: { subject, target, requestsPerSecond: 1e6, burst: 1e6, callsPerDay: 4_000_000_000 },
  });
}

function measure(limiter: CallLimiter, label: string): number {
  const grantIds = ["0000000000000001"];
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const agent = `agent-${i % agents}`;
    if (
      limiter.admit({ agentId: agent, userId: `user-${i % agents}`, tool: "bench.tool", grantIds })
    )
      throw new Error(`${label}: call ${i} was refused; the bench limits should admit every call`);
  }
  const ns = Number(process.hrtime.bigint() - started) / calls;
  console.log(`${label.padEnd(44)} ${ns.toFixed(0).padStart(6)} ns per call`);
  return ns;
}

const filler: Limit[] = [];
for (let i = 0; filler.length < limitsLoaded - (2 * agents + 2); i++)
  filler.push(limit(RateLimitSubject.AGENT, "agent", `other-${i}`));
const applying: Limit[] = [
  limit(RateLimitSubject.TOOL, "tool", "bench.tool"),
  limit(RateLimitSubject.GRANT, "grant", "0000000000000001"),
];
for (let a = 0; a < agents; a++) {
  applying.push(limit(RateLimitSubject.AGENT, "agent", `agent-${a}`));
  applying.push(limit(RateLimitSubject.USER, "user", `user-${a}`));
}

console.log(`${limitsLoaded} limits loaded, ${calls} calls, ${agents} agents`);
// A first round lets the JIT compile admit(); the second is the one to read.
for (const round of ["warm-up", "measured"]) {
  console.log(`-- ${round}`);
  const none = measure(new CallLimiter(snapshotOf(filler), 1), "no limit applies (look-ups only)");
  const four = measure(
    new CallLimiter(snapshotOf([...filler, ...applying]), 1),
    "four limits apply (agent, user, tool, grant)",
  );
  console.log(
    `a call's cost of four applying limits: ${(four - none).toFixed(0)} ns over look-ups`,
  );
}
