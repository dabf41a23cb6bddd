import { randomFillSync } from "node:crypto";

/** Random bytes drawn ahead in one call: a call's ids take a few each, a syscall a few hundred. */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

/** `n` fresh random bytes (n ≤ the pool), copied out of the pool; it refills when used up. */
function randomBytes(n: number): Buffer {
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const out = Buffer.allocUnsafe(n);
  POOL.copy(out, 0, poolAt, poolAt + n);
  // The bytes handed out are never handed out again.
  POOL.fill(0, poolAt, poolAt + n);
  poolAt += n;
  return out;
}

/**
 * The prefix of the call ids the Dispatcher makes. No caller may send one, so such an id is
 * owned by its call from the start and needs no ownership claim in NATS.
 */
export const GENERATED_CALL_ID_PREFIX = "tm-";

/**
 * A fresh call id, reserved for its call by the prefix: a UUID version 7, whose first 48 bits are
 * the time it was made (RFC 9562). The time lets a call's outcomes be found in their shard of the
 * outcome stream from then on, and lets Audit's index key calls in the order they came.
 */
export function newCallId(now = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | ((bytes[6] as number) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f);
  const hex = bytes.toString("hex");
  return `${GENERATED_CALL_ID_PREFIX}${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const GENERATED_V7 =
  /^tm-([0-9a-f]{8})-([0-9a-f]{4})-7([0-9a-f]{3})-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * When the Dispatcher made a call id (ms since epoch) and the 12 random bits after the time;
 * undefined for an id a caller chose (or one made before ids carried their time).
 */
export function generatedCallTime(callId: string): { ms: number; random12: number } | undefined {
  const m = GENERATED_V7.exec(callId);
  if (!m) return undefined;
  return {
    ms: Number.parseInt(`${m[1]}${m[2]}`, 16),
    random12: Number.parseInt(m[3] as string, 16),
  };
}

/** When the Dispatcher made a call id (ms since epoch); undefined for an id a caller chose. */
export function callTimeOf(callId: string): number | undefined {
  return generatedCallTime(callId)?.ms;
}

/**
 * A fresh W3C trace id for a call that brought none: the time in ms (12 hex digits, as in a
 * UUIDv7), then 80 random bits. Trace ids that callers bring are taken as they are; ours sort by
 * time, so Audit's trace index fills its last pages in order (libs/names traceKey).
 */
export function newTraceId(now = Date.now()): string {
  return `${now.toString(16).padStart(12, "0").slice(-12)}${randomBytes(10).toString("hex")}`;
}

/**
 * The 52-bit key a trace id is indexed by: its first 13 hex digits. Random ids give random keys,
 * as a hash would; the Dispatcher's (newTraceId) give keys in the order of their time. Undefined
 * for a string that is not a trace id.
 */
export function traceKey(traceId: string): number | undefined {
  return /^[0-9a-f]{32}$/.test(traceId) ? Number.parseInt(traceId.slice(0, 13), 16) : undefined;
}

/** Keys of timed call ids count ms from here: 2^41 ms reach 2093 within 53 bits. */
const KEY_EPOCH_MS = Date.UTC(2024, 0, 1);

/**
 * An id's key in an SQLite index (Audit's records): a 53-bit number,
 * not the text, because an index of random keys dirties a page per insert wherever the key falls,
 * and small keys mean fewer, cached pages. A call id the Dispatcher made carries its time and is
 * keyed by it, so those keys arrive in order and fill the index's last pages instead of dirtying
 * one each; any other id is hashed. Keys may collide: every match is confirmed on the id itself.
 */
export function idKey(id: string): number {
  const timed = generatedCallTime(id);
  if (timed && timed.ms >= KEY_EPOCH_MS && timed.ms - KEY_EPOCH_MS < 2 ** 41)
    return (timed.ms - KEY_EPOCH_MS) * 4096 + timed.random12;
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  return (h1 >>> 0) + (h2 & 0x1fffff) * 0x100000000;
}
