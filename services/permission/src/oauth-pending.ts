import { randomBytes } from "node:crypto";
import type { Logger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import { VaultSealError } from "@toolmesh/vault";
import type { Vault } from "./vault-store.js";

/** An authorization under way: whose, with which PKCE verifier, until when (epoch ms). */
export interface Pending {
  provider: string;
  user: string;
  verifier: string;
  exp: number;
}

/** The `state` of an authorization: 24 random bytes, base64url. */
const STATE = /^[A-Za-z0-9_-]{32}$/;

/**
 * Authorizations under way, sealed in the vault as `pending.<state>` from the moment a connect
 * link is opened until its callback takes them (once). The sweep removes those nobody came back
 * for once they expire, so abandoned links leave nothing behind.
 */
export class PendingAuthorizations {
  constructor(
    private readonly vault: Vault,
    private readonly now: () => number,
  ) {}

  /** Stores an authorization; its state, for the authorization request. */
  async open(pending: Pending): Promise<string> {
    const state = randomBytes(24).toString("base64url");
    await this.vault.write(buckets.vault.pendingKey(state), encode(pending));
    return state;
  }

  /** Takes an authorization: undefined when the state is unknown, already used or swept. */
  async take(state: string): Promise<Pending | undefined> {
    if (!STATE.test(state)) return undefined;
    const key = buckets.vault.pendingKey(state);
    const plain = await this.vault.read(key);
    // One use: a replayed callback finds nothing.
    await this.vault.remove(key);
    return plain ? decode(plain) : undefined;
  }

  /** Removes every authorization past its expiry (and any that no longer opens); how many. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (const key of await this.vault.keys(buckets.vault.pendingPrefix)) {
      let expired: boolean;
      try {
        const plain = await this.vault.read(key);
        if (!plain) continue;
        expired = decode(plain).exp <= this.now();
      } catch (error) {
        if (!(error instanceof VaultSealError) && !(error instanceof SyntaxError)) throw error;
        expired = true;
      }
      if (!expired) continue;
      await this.vault.remove(key);
      removed++;
    }
    return removed;
  }
}

/**
 * Sweeps the abandoned authorizations every `intervalMs` (every replica does; a removal is
 * idempotent).
 */
export function sweepPendingEvery(
  pending: PendingAuthorizations,
  intervalMs: number,
  log: Logger,
): { stop(): void } {
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    pending
      .sweep()
      .then(
        (removed) => {
          if (removed > 0) log.info({ removed }, "swept abandoned OAuth authorizations");
        },
        (error: unknown) =>
          log.warn(
            { err_name: (error as Error)?.name },
            "sweeping abandoned OAuth authorizations failed; retrying at the next interval",
          ),
      )
      .finally(() => {
        sweeping = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

function encode(pending: Pending): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(pending));
}

function decode(plain: Uint8Array): Pending {
  return JSON.parse(new TextDecoder().decode(plain)) as Pending;
}
