import { createLogger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import { newVaultKey, parseVaultKey, type TokenSet, VaultCipher } from "@toolmesh/vault";
import { describe, expect, it } from "vitest";
import { PendingAuthorizations } from "../src/oauth-pending.js";
import { decodeTokens, encodeTokens, type RefreshOnce, refreshOnce } from "../src/oauth-refresh.js";
import { MemorySealedBucket, Vault } from "../src/vault-store.js";

const log = createLogger("oauth-refresh-test", "silent");
const KEY = buckets.vault.tokensKey("acme.alice");

async function memoryVault(): Promise<{ vault: Vault; sealed: MemorySealedBucket }> {
  const sealed = new MemorySealedBucket();
  const cipher = new VaultCipher(parseVaultKey(newVaultKey(), "a test key"));
  return { vault: await Vault.open(sealed, cipher, log), sealed };
}

const expired: TokenSet = {
  accessToken: "at-1",
  refreshToken: "rt-1",
  expiresAt: Date.now() - 1,
  scopes: [],
};

/** A replica's refresh of KEY: its own holder id, an upstream answer it can hold back. */
function replica(vault: Vault, holder: string, upstream: (tokens: TokenSet) => Promise<TokenSet>) {
  const options: RefreshOnce = {
    vault,
    key: KEY,
    holder,
    now: Date.now,
    log,
    fresh: (t) => t.expiresAt > Date.now(),
    refresh: upstream,
  };
  return () => refreshOnce(options);
}

// Refreshing a user's tokens once across Permission replicas (a lease in the sealed tokens), and
// the authorizations under way swept once expired: each replica here shares one vault.
describe("OAuth refresh across replicas", () => {
  it("spends a refresh token once when two replicas need it at the same moment", async () => {
    const { vault } = await memoryVault();
    await vault.write(KEY, encodeTokens(expired));
    const spent: string[] = [];
    let answer: () => void = () => {};
    let asked: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const upstreamAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const upstream = async (tokens: TokenSet) => {
      spent.push(tokens.refreshToken);
      asked();
      await held;
      return {
        accessToken: "at-2",
        refreshToken: "rt-2",
        expiresAt: Date.now() + 60_000,
        scopes: [],
      };
    };
    // Both read the expired tokens; the upstream answers only once both have.
    const a = replica(vault, "replica-a", upstream)();
    const b = replica(vault, "replica-b", upstream)();
    await upstreamAsked;
    answer();
    const results = await Promise.all([a, b]);
    expect(spent).toEqual(["rt-1"]);
    expect(results.map((r) => r?.tokens.accessToken)).toEqual(["at-2", "at-2"]);
    expect(results.map((r) => r?.refreshed).sort()).toEqual([false, true]);
    const stored = decodeTokens((await vault.read(KEY)) as Uint8Array);
    expect(stored).toMatchObject({ accessToken: "at-2", refreshToken: "rt-2" });
    expect(stored.lease).toBeUndefined();
  });

  it("takes over a lease whose holder died once it lapses", async () => {
    const { vault } = await memoryVault();
    await vault.write(
      KEY,
      encodeTokens({ ...expired, lease: { holder: "gone", until: Date.now() - 1 } }),
    );
    const result = await replica(vault, "replica-a", async () => ({
      ...expired,
      accessToken: "at-2",
      refreshToken: "",
      expiresAt: Date.now() + 60_000,
    }))();
    expect(result).toMatchObject({ refreshed: true, tokens: { accessToken: "at-2" } });
    // An upstream that gives no new refresh token keeps the old one usable.
    expect(decodeTokens((await vault.read(KEY)) as Uint8Array).refreshToken).toBe("rt-1");
  });

  it("gives the lease back when the upstream fails, so the next call tries at once", async () => {
    const { vault } = await memoryVault();
    await vault.write(KEY, encodeTokens(expired));
    const refused = new Error("upstream down");
    await expect(
      replica(vault, "replica-a", async () => {
        throw refused;
      })(),
    ).rejects.toBe(refused);
    expect(decodeTokens((await vault.read(KEY)) as Uint8Array)).toEqual(expired);
    const retried = await replica(vault, "replica-b", async () => ({
      ...expired,
      accessToken: "at-2",
      expiresAt: Date.now() + 60_000,
    }))();
    expect(retried?.tokens.accessToken).toBe("at-2");
  });

  it("neither keeps nor uses tokens of a connection revoked while the upstream answered", async () => {
    const { vault } = await memoryVault();
    await vault.write(KEY, encodeTokens(expired));
    const result = await replica(vault, "replica-a", async () => {
      await vault.remove(KEY);
      return { ...expired, accessToken: "at-2", expiresAt: Date.now() + 60_000 };
    })();
    expect(result).toBeUndefined();
    expect(await vault.read(KEY)).toBeUndefined();
  });
});

describe("authorizations under way", () => {
  it("are taken once, and swept once expired (or no longer sealed with the vault key)", async () => {
    const { vault, sealed } = await memoryVault();
    const clock = { ms: Date.now() };
    const pending = new PendingAuthorizations(vault, () => clock.ms);
    const base = { provider: "acme", user: "alice", verifier: "v" };
    const soon = await pending.open({ ...base, exp: clock.ms + 1_000 });
    const later = await pending.open({ ...base, exp: clock.ms + 60_000 });
    const used = await pending.open({ ...base, exp: clock.ms + 60_000 });
    await sealed.put(buckets.vault.pendingKey("x".repeat(32)), new Uint8Array([1, 2, 3]));
    expect(await pending.take(used)).toMatchObject(base);
    expect(await pending.take(used)).toBeUndefined();
    expect(await pending.take("not a state")).toBeUndefined();

    expect(await pending.sweep()).toBe(1);
    clock.ms += 1_001;
    expect(await pending.sweep()).toBe(1);
    expect(await vault.keys(buckets.vault.pendingPrefix)).toEqual([
      buckets.vault.pendingKey(later),
    ]);
    expect(await pending.take(soon)).toBeUndefined();
    expect(await pending.take(later)).toMatchObject(base);
    // Only authorizations are swept: the key check stays.
    expect(await vault.keys(">")).toEqual([buckets.vault.metaKey]);
  });
});
