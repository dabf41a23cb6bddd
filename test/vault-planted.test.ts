import { readFile } from "node:fs/promises";
import path from "node:path";
import { listSegments, SegmentReader } from "@toolmesh/archive";
import { buckets } from "@toolmesh/nats";
import { AuditAction, CallStatus } from "@toolmesh/proto";
import {
  connectAs,
  eventually,
  failure,
  filesUnder,
  secretsFound,
  secretsInStreams,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startVaultStack, type VaultStack } from "./vault-fixture.js";

// A secret of every kind the vault keeps — a tool's secret, an upstream's client secret, a user's
// access and refresh tokens (rotated by a refresh) — used through the whole chain, then searched
// for, byte for byte, in every place toolmesh writes: every JetStream stream and KV bucket,
// Audit's log, index and archive, the memory files, every process's output, every metrics page.
// The vault's bucket holds them, sealed: not in clear there either.
describe("a planted secret is nowhere but sealed in the vault", () => {
  let vault: VaultStack;
  const planted = `planted-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  let secretId = "";
  const callIds: string[] = [];
  const stack = () => vault.stack;
  const admin = () => stack().as(stack().adminToken);

  async function call(name: string, user: string) {
    const res = await vault.call(name, user);
    callIds.push(res.callId);
    return res;
  }

  beforeAll(async () => {
    vault = await startVaultStack({
      oauth: { rotateRefreshTokens: true },
      // Segments sealed within moments: the archive holds the calls' blocks when it is searched.
      serviceEnv: { audit: { TOOLMESH_AUDIT_SEGMENT_MAX_AGE_MS: "200" } },
    });
    secretId = await vault.putEchoKey(planted);
  }, 90_000);

  afterAll(async () => {
    await vault?.stop();
  });

  it("uses every kind of secret through the chain", async () => {
    const refused = await failure(call("acme.whoami", "alice"));
    const link = /open (\S+) to connect it/.exec(refused.rawMessage)?.[1] ?? "";
    expect((await connectAs(link, "alice")).status).toBe(200);
    const first = await eventually(() => call("acme.whoami", "alice"), 2000, "alice's connection");
    expect(first.output).toEqual({ user: "alice" });
    // Past the refresh margin: the next call refreshes, and the upstream rotates the refresh token.
    await vault.untilRefreshDue("alice");
    expect((await call("acme.whoami", "alice")).output).toEqual({ user: "alice" });
    expect(vault.as.grants.filter((g) => g === "refresh_token")).toHaveLength(1);

    const ok = await eventually(
      () => call("echo.ok", "carol"),
      2000,
      "the secret to reach the Dispatcher",
    );
    expect(ok.output).toEqual({ key: "[redacted]", "[redacted]": "as a key" });
    const failed = await call("echo.fail", "carol");
    expect(failed.status).toBe(CallStatus.FAILURE);
    expect(failed.error?.message).toContain("bad key [redacted]");
  });

  it("finds none of them in any stream, bucket, archive, memory file, log or metrics page", async () => {
    // What is derived after the calls has landed: every call's end in Audit's index and in the
    // agent's memory file, and a sealed segment of the archive.
    for (const callId of callIds)
      await eventually(
        async () => {
          const { records } = await stack()
            .auditClient()
            .queryRecords({ callId, pageSize: 20 }, admin());
          expect(records.some((r) => r.action === AuditAction.TOOL_CALL)).toBe(true);
        },
        20_000,
        `call ${callId}'s end record`,
      );
    const memoryText = async () =>
      (
        await Promise.all(
          (
            await filesUnder(path.join(stack().dataDir, "memory")).catch(() => [])
          ).map((f) => readFile(f, "utf8")),
        )
      ).join("\n");
    await eventually(
      async () => {
        const text = await memoryText();
        for (const callId of callIds) expect(text).toContain(callId);
      },
      20_000,
      "every call in the agent's memory file",
    );
    const segments = await eventually(
      async () => {
        const found = await listSegments(path.join(stack().dataDir, "audit", "archive"));
        expect(found.length).toBeGreaterThan(0);
        return found;
      },
      20_000,
      "a sealed segment in Audit's archive",
    );

    // Two token answers (the code's and the refresh's), each an access, a refresh and an ID token.
    expect(vault.as.issued.length).toBeGreaterThanOrEqual(6);
    const secrets = [planted, vault.as.clientSecret, ...vault.as.issued];
    // The values themselves, and the two encodings a careless writer would use.
    const needles = [
      ...secrets,
      ...[planted, vault.as.clientSecret].flatMap((v) => [
        Buffer.from(v).toString("base64"),
        Buffer.from(v).toString("base64url"),
        Buffer.from(v).toString("hex"),
      ]),
    ];

    // Every message of every stream and bucket, the vault's included.
    const streams = await secretsInStreams(stack().nc, needles);
    expect(streams.found).toEqual([]);
    const vaultStream = `KV_${buckets.vault.name}`;
    expect(streams.read[vaultStream]).toBeGreaterThan(0);
    expect(Object.keys(streams.read).length).toBeGreaterThan(5);
    // The vault does hold them, sealed: the secret's value, the client secret, alice's tokens.
    const sealed = await (await stack().nc.jetstream()).views.kv(buckets.vault.name);
    const keys: string[] = [];
    for await (const key of await sealed.keys()) keys.push(key);
    expect(keys).toEqual(
      expect.arrayContaining([
        buckets.vault.valueKey(secretId),
        buckets.vault.clientSecretKey("acme"),
        expect.stringMatching(/^tokens\./),
      ]),
    );

    // Every archived block, decompressed.
    const archived: string[] = [];
    for (const segment of segments) {
      const reader = await SegmentReader.open(segment.file);
      try {
        for await (const block of reader.blocks()) {
          const bytes = Buffer.from(block.data);
          for (const needle of needles)
            if (bytes.includes(needle)) archived.push(`${segment.name} #${block.seq}`);
        }
      } finally {
        await reader.close();
      }
    }
    expect(archived).toEqual([]);

    // Every file of the stack (NATS store, Audit's log index and archive, memory files, every
    // process's output) and every metrics page.
    const pages = [
      stack().launcherMetricsUrl,
      ...Object.values(stack().stackFile().services).flatMap((s) =>
        s.url ? [`${s.url}/metrics`] : [],
      ),
    ];
    expect(await secretsFound(needles, { dirs: [stack().dataDir], pages })).toEqual([]);
    const files = (await filesUnder(stack().dataDir)).map((f) => path.relative(stack().dataDir, f));
    for (const where of ["jetstream", "audit/index", "audit/archive", "memory", "logs"])
      expect(
        files.some((f) => f.includes(where)),
        where,
      ).toBe(true);
    for (const name of stack().processes)
      expect(
        files.some((f) => f.startsWith("logs") && f.includes(name)),
        `${name}'s log`,
      ).toBe(true);
    const logs = await stack().logText();
    for (const needle of needles) expect(logs.includes(needle)).toBe(false);
  });
});
