import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { KvConflictError } from "@toolmesh/nats";
import { type TokenSet, UPSTREAM_TIMEOUT_MS } from "@toolmesh/vault";
import type { Vault } from "./vault-store.js";

/** A user's tokens as sealed in the vault, with the lease of the replica refreshing them, if any. */
export interface StoredTokens extends TokenSet {
  lease?: { holder: string; until: number };
}

/** A lease outlives the longest upstream request: its holder is done, or gave up, before it lapses. */
export const REFRESH_LEASE_MS = UPSTREAM_TIMEOUT_MS + 2_000;
/** How often a replica waiting for another's refresh looks for the new tokens. */
const POLL_MS = 50;

export function encodeTokens(tokens: StoredTokens): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(tokens));
}

export function decodeTokens(plain: Uint8Array): StoredTokens {
  return JSON.parse(new TextDecoder().decode(plain)) as StoredTokens;
}

export interface RefreshOnce {
  vault: Vault;
  /** The tokens' key in the vault. */
  key: string;
  /** This replica, as its leases name it. */
  holder: string;
  now: () => number;
  log: Logger;
  /** Whether tokens are fresh enough to use as they are. */
  fresh(tokens: TokenSet): boolean;
  /** Asks the upstream for new tokens. */
  refresh(tokens: TokenSet): Promise<TokenSet>;
}

/**
 * Refreshes a user's tokens once across every Permission replica. The replica that needs it first
 * writes a lease into the sealed tokens (compare-and-set on their revision); the others wait for
 * the tokens it stores instead of spending the same refresh token — an upstream that rotates
 * refresh tokens revokes the whole grant when one is used twice. A lease whose holder died lapses
 * after REFRESH_LEASE_MS. Gives the tokens to use (`refreshed` when this replica got them), or
 * undefined when they are gone (the connection was revoked meanwhile).
 */
export async function refreshOnce(
  options: RefreshOnce,
): Promise<{ tokens: TokenSet; refreshed: boolean } | undefined> {
  const { vault, key, now } = options;
  const deadline = now() + 2 * REFRESH_LEASE_MS;
  let waited = false;
  while (now() < deadline) {
    const stored = await vault.readAt(key);
    if (!stored) return undefined;
    const { lease, ...tokens } = decodeTokens(stored.plain);
    if (options.fresh(tokens)) return { tokens, refreshed: false };
    if (lease && lease.holder !== options.holder && lease.until > now()) {
      if (!waited)
        options.log.info(
          { lease_holder: lease.holder },
          "waiting for another Permission replica's refresh of the same tokens",
        );
      waited = true;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      continue;
    }
    let leased: number;
    try {
      leased = await vault.write(
        key,
        encodeTokens({
          ...tokens,
          lease: { holder: options.holder, until: now() + REFRESH_LEASE_MS },
        }),
        stored.revision,
      );
    } catch (error) {
      // Another replica took the lease (or stored new tokens) first: read again.
      if (error instanceof KvConflictError) continue;
      throw error;
    }
    let next: TokenSet;
    try {
      next = await options.refresh(tokens);
    } catch (error) {
      // Give the lease back, so the next call tries again at once rather than after it lapses.
      await vault.write(key, encodeTokens(tokens), leased).catch(() => {});
      throw error;
    }
    if (!next.refreshToken) next.refreshToken = tokens.refreshToken;
    try {
      await vault.write(key, encodeTokens(next), leased);
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      // Revoked while the upstream answered: the new tokens are neither kept nor used.
      if (!(await vault.readAt(key))) return undefined;
      // Connected again meanwhile (or the lease lapsed): the stored tokens stay; these still work.
      return { tokens: next, refreshed: false };
    }
    return { tokens: next, refreshed: true };
  }
  throw new ConnectError(
    "another Permission replica has been refreshing this user's tokens for too long; retry shortly",
    Code.Unavailable,
  );
}
