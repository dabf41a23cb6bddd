import { hash } from "node:crypto";
import { type ConnectError, retryLater } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { clipped } from "@toolmesh/names";
import { parseApiKeyToken } from "./api-key.js";

/** How failed authentication is limited; see docs/security.md. */
export interface AuthGuardSettings {
  /** Failures a source address (or a key id) may have in a burst before it is throttled. */
  burst: number;
  /** Failures per second a source (or a key id) earns back. */
  perSecond: number;
  /** At most one log line per source this often; the lines between are counted, not written. */
  logIntervalMs: number;
  /** Most sources and key ids tracked at once; the least recently failed are forgotten first. */
  maxTracked: number;
}

export const defaultAuthGuardSettings: AuthGuardSettings = {
  burst: 20,
  perSecond: 1,
  logIntervalMs: 10_000,
  maxTracked: 10_000,
};

/** What a failed credential says about who tried, never the secret itself. */
export interface Claimant {
  /** `key:<id>` for an API key, `jwt:<sub>` for a JWT, "" when neither can be read. */
  id: string;
  /** The API key id, when the token is shaped like one. */
  keyId?: string;
  /** The JWT subject as claimed (unverified), when the token is a readable JWT. */
  subject?: string;
}

/** Totals since start, for the metrics endpoint to export. */
export interface AuthFailureCounters {
  /** Credentials refused (missing, malformed, unknown, bad signature, expired, revoked). */
  failures: number;
  /** Requests refused with RESOURCE_EXHAUSTED because their source or key id was throttled. */
  throttled: number;
  /** Failure log lines left out by the per-source rate limit. */
  suppressedLogLines: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
  lastLogMs: number;
  unlogged: number;
}

/** Token fingerprints of credentials that verified lately, so a throttle never blocks them. */
const KNOWN_GOOD_MS = 10 * 60 * 1000;

/**
 * Logs, counts and throttles failed authentication. A source address or key id that fails more
 * than `burst` times, faster than `perSecond` earns back, is refused with RESOURCE_EXHAUSTED and
 * a RetryInfo delay, without its credential being verified. A credential that verified lately is
 * always verified, so a valid caller sharing an address with an attacker is not slowed.
 */
/** What admit() answers for a token known good for more than half its window yet. */
const KNOWN_GOOD: string[] = Object.freeze([]) as unknown as string[];

export class AuthGuard {
  private readonly buckets = new Map<string, Bucket>();
  private readonly knownGood = new Map<string, number>();
  readonly counters: AuthFailureCounters = { failures: 0, throttled: 0, suppressedLogLines: 0 };

  constructor(
    private readonly log: Logger,
    private readonly settings: AuthGuardSettings = defaultAuthGuardSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** A stable, secret-free fingerprint of a token (one-shot: every RPC computes one). */
  fingerprint(token: string): string {
    return hash("sha256", token, "base64url");
  }

  /**
   * Lets a request's token be verified, or throws RESOURCE_EXHAUSTED when its source or key id is
   * throttled. Where a source or key id is half-way to its limit, a token not known good is charged
   * one attempt up front (so a thousand concurrent bad requests cannot all pass before the first one
   * fails); succeeded() gives it back. Returns what was charged, for succeeded() and failed().
   */
  admit(token: string, peer: string): string[] {
    const good = this.knownGood.get(this.fingerprint(token));
    if (good !== undefined && good > this.now() + KNOWN_GOOD_MS / 2) return KNOWN_GOOD;
    if (good !== undefined && good > this.now()) return [];
    const keys = [sourceOf(peer)];
    const claimant = claimantOf(token);
    if (claimant.id !== "") keys.push(claimant.id);
    const waitMs = Math.max(...keys.map((key) => this.waitMs(key)));
    if (waitMs > 0) {
      this.counters.throttled++;
      throw throttled(waitMs);
    }
    // Only a source or key id already half-way to its limit is charged up front, so a valid
    // caller's first burst of calls is never throttled by a few failures of the past.
    const charged = keys.filter((key) => {
      const bucket = this.buckets.get(key);
      return bucket !== undefined && bucket.tokens <= this.settings.burst / 2;
    });
    for (const key of charged) this.spend(key, -1);
    return charged;
  }

  /** Remembers a token that verified and gives back what admit() charged for it. */
  succeeded(token: string, charged: string[]): void {
    // Known good for a while yet: nothing to give back, nothing to refresh (no second hash).
    if (charged === KNOWN_GOOD) return;
    for (const key of charged) this.spend(key, 1);
    const fingerprint = this.fingerprint(token);
    this.knownGood.delete(fingerprint);
    this.knownGood.set(fingerprint, this.now() + KNOWN_GOOD_MS);
    if (this.knownGood.size > this.settings.maxTracked) this.forgetOldest(this.knownGood);
  }

  /** Counts one failure against the source and key id (what admit() did not charge yet) and logs it. */
  failed(token: string, peer: string, reason: string, charged: string[] = []): void {
    this.counters.failures++;
    const claimant = claimantOf(token);
    const keys = [sourceOf(peer), ...(claimant.id !== "" ? [claimant.id] : [])];
    for (const key of keys) if (!charged.includes(key)) this.spend(key, -1);
    const source = this.spend(sourceOf(peer), 0);
    const now = this.now();
    if (now - source.lastLogMs < this.settings.logIntervalMs && source.lastLogMs !== 0) {
      source.unlogged++;
      this.counters.suppressedLogLines++;
      return;
    }
    this.log.warn(
      {
        peer,
        ...(claimant.keyId ? { key_id: claimant.keyId } : {}),
        ...(claimant.subject ? { jwt_sub: claimant.subject } : {}),
        reason,
        ...(source.unlogged > 0 ? { failures_not_logged: source.unlogged } : {}),
        failures_total: this.counters.failures,
      },
      "authentication failed",
    );
    source.lastLogMs = now;
    source.unlogged = 0;
  }

  /** Milliseconds until `key` may fail again; 0 when it may now. */
  private waitMs(key: string): number {
    const bucket = this.buckets.get(key);
    if (!bucket) return 0;
    this.refill(bucket);
    if (bucket.tokens >= 1) return 0;
    return Math.ceil(((1 - bucket.tokens) / this.settings.perSecond) * 1000);
  }

  /** Adds `delta` attempts to a key's bucket (-1 charges one, 1 gives one back). */
  private spend(key: string, delta: number): Bucket {
    let bucket = this.buckets.get(key);
    if (bucket) {
      this.buckets.delete(key);
      this.refill(bucket);
    } else {
      bucket = { tokens: this.settings.burst, updatedMs: this.now(), lastLogMs: 0, unlogged: 0 };
    }
    bucket.tokens = Math.min(this.settings.burst, Math.max(0, bucket.tokens + delta));
    // Re-inserted, so the Map's order is least recently failed first.
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.settings.maxTracked) this.forgetOldest(this.buckets);
    return bucket;
  }

  private refill(bucket: Bucket): void {
    const now = this.now();
    const earned = ((now - bucket.updatedMs) / 1000) * this.settings.perSecond;
    bucket.tokens = Math.min(this.settings.burst, bucket.tokens + earned);
    bucket.updatedMs = now;
  }

  private forgetOldest(map: Map<string, unknown>): void {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

/** The throttle key of a peer `ip:port`: its address alone, as each connection has its own port. */
function sourceOf(peer: string): string {
  const colon = peer.lastIndexOf(":");
  return `peer:${colon > 0 ? peer.slice(0, colon) : peer}`;
}

/** RESOURCE_EXHAUSTED with a RetryInfo detail saying when to try again. */
function throttled(waitMs: number): ConnectError {
  return retryLater(
    `too many failed authentication attempts from this address or for this key; retry in ${Math.ceil(waitMs / 1000)} s with a valid credential`,
    waitMs,
  );
}

/** Who a token claims to be, read without verifying it and clipped; never the secret part. */
export function claimantOf(token: string): Claimant {
  const key = parseApiKeyToken(token);
  if (key) return { id: `key:${key.id}`, keyId: key.id };
  const parts = token.split(".");
  if (parts.length === 3) {
    try {
      const payload = JSON.parse(Buffer.from(parts[1] ?? "", "base64url").toString("utf8")) as {
        sub?: unknown;
      };
      if (typeof payload.sub === "string" && payload.sub !== "") {
        const subject = clipped("principalId", payload.sub.replace(/[^\x21-\x7e]/g, "?"));
        return { id: `jwt:${subject}`, subject };
      }
    } catch {
      // Not a readable JWT: counted against the source only.
    }
  }
  return { id: "" };
}
