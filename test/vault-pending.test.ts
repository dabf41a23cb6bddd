import { buckets } from "@toolmesh/nats";
import { eventually } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startVaultStack, type VaultStack } from "./vault-fixture.js";

/** Connect links, and the authorizations begun from them, live this long here. */
const LINK_TTL_MS = 1000;

// An authorization begun from a connect link and never finished (the user closed the tab at the
// upstream's login page) leaves its PKCE verifier sealed in the vault as `pending.<state>`; the
// sweep removes it once it has expired, and a callback that comes after finds nothing to take.
describe("abandoned OAuth authorizations", () => {
  let vault: VaultStack;
  const admin = () => vault.stack.as(vault.stack.adminToken);

  beforeAll(async () => {
    vault = await startVaultStack({
      serviceEnv: { permission: { TOOLMESH_CONNECT_LINK_TTL_MS: String(LINK_TTL_MS) } },
    });
  }, 90_000);

  afterAll(async () => {
    await vault?.stop();
  });

  async function pendingKeys(): Promise<string[]> {
    const kv = await (await vault.stack.nc.jetstream()).views.kv(buckets.vault.name);
    const keys: string[] = [];
    for await (const key of await kv.keys(buckets.vault.pendingPrefix)) keys.push(key);
    return keys;
  }

  it("are swept from the vault once expired, and their callback then finds nothing", async () => {
    const { url } = await vault.stack.permissionClient.connectAccount(
      { provider: "acme", userId: "alice" },
      admin(),
    );
    // Opening the link begins the authorization: Permission sends the browser upstream.
    const opened = await fetch(url, { redirect: "manual" });
    expect(opened.status).toBe(302);
    const upstream = new URL(opened.headers.get("location") ?? "");
    expect(upstream.origin).toBe(vault.as.issuer);
    const state = upstream.searchParams.get("state") ?? "";
    expect(await pendingKeys()).toEqual([buckets.vault.pendingKey(state)]);

    // Nobody comes back: the sweep removes it after the link's lifetime.
    await eventually(
      async () => expect(await pendingKeys()).toEqual([]),
      LINK_TTL_MS * 5,
      "the abandoned authorization to be swept",
    );
    const callback = new URL("/oauth/callback", url);
    callback.searchParams.set("state", state);
    callback.searchParams.set("code", "a-late-code");
    const late = await fetch(callback);
    expect(late.status).toBe(400);
    expect(await late.text()).toContain("this authorization is unknown, already used or expired");
    expect(vault.as.grants).toEqual([]);
  });
});
