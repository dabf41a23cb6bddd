import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ServiceProcess, startNats, startService, type TestNats } from "@toolmesh/testkit";
import { newVaultKey } from "@toolmesh/vault";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Two replicas starting at once against a fresh bucket: exactly one bootstraps the keys.
describe("bootstrap with two replicas", () => {
  let nats: TestNats;
  const dirs: string[] = [];
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    nats = await startNats();
    for (let i = 0; i < 2; i++)
      dirs.push(await mkdtemp(path.join(tmpdir(), `toolmesh-replica-${i}-`)));
    // Replicas with data dirs of their own share the vault key, as a deployment of them must.
    const vaultKey = newVaultKey();
    const started = await Promise.allSettled(
      dirs.map((dir) =>
        startService("permission", {
          NATS_URL: nats.url,
          TOOLMESH_PERMISSION_PORT: "0",
          TOOLMESH_DATA_DIR: path.join(dir, "data"),
          TOOLMESH_VAULT_KEY: vaultKey,
        }),
      ),
    );
    for (const s of started) if (s.status === "fulfilled") services.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }, 60_000);
  afterAll(async () => {
    for (const s of services) await s.stop();
    await nats?.destroy();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("writes the token files in exactly one data dir", () => {
    const withTokens = dirs.filter((dir) => existsSync(path.join(dir, "data", "admin.token")));
    expect(withTokens).toHaveLength(1);
    const bootstrapped = services.filter((s) =>
      s.stdout.lines.some((l) => l.includes("bootstrapped the admin and service API keys")),
    );
    const skipped = services.filter((s) =>
      s.stdout.lines.some((l) => l.includes("admin key already bootstrapped")),
    );
    expect([bootstrapped.length, skipped.length]).toEqual([1, 1]);
  });
});
