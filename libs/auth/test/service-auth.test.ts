import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import { ApiKeyRecordSchema } from "@toolmesh/proto";
import { eventually, failure, startTestBus, type TestBus } from "@toolmesh/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_KEY_HASH_ALGORITHM,
  mintApiKey,
  parseApiKeyToken,
  type ServiceAuth,
  serviceToken,
  startServiceAuth,
} from "../src/index.js";

const config = {
  jwtSecret: undefined,
  jwksFile: undefined,
  jwtIssuer: "toolmesh",
  jwtAudience: "toolmesh",
  jwtUserClaim: "on_behalf_of",
  jwtRolesClaim: "roles",
};

function record(minted: ReturnType<typeof mintApiKey>, revoked = false) {
  return toBinary(
    ApiKeyRecordSchema,
    create(ApiKeyRecordSchema, {
      apiKey: { id: minted.id, agentId: "a1", userId: "u1", roles: ["agent"], revoked },
      salt: minted.salt,
      hash: minted.hash,
      hashAlgorithm: API_KEY_HASH_ALGORITHM,
    }),
  );
}

describe("API key tokens", () => {
  it("mints tmk_<id>_<secret> with 32 random bytes and parses it back", () => {
    const minted = mintApiKey();
    expect(minted.token).toMatch(/^tmk_[a-f0-9]{16}_[A-Za-z0-9_-]{43}$/);
    expect(parseApiKeyToken(minted.token)?.id).toBe(minted.id);
    expect(minted.hash).toMatch(/^[a-f0-9]{64}$/);
    expect(minted.token).not.toContain(minted.hash);
    expect(mintApiKey().token).not.toBe(minted.token);
  });

  it.each([
    "tmk_",
    "tmk_abc_def",
    `tmk_${"g".repeat(16)}_${"A".repeat(43)}`,
    `xmk_${"a".repeat(16)}_${"A".repeat(43)}`,
  ])("does not parse %j", (token) => {
    expect(parseApiKeyToken(token)).toBeUndefined();
  });
});

describe("startServiceAuth with API keys", () => {
  let bus: TestBus;
  let nc: NatsConnection;
  let auth: ServiceAuth | undefined;
  const lines: string[] = [];
  const waiters: { text: string; resolve: () => void }[] = [];
  const log = createLogger(
    "test",
    "info",
    new Writable({
      write(chunk, _enc, done) {
        const line = String(chunk);
        lines.push(line);
        for (const w of waiters) if (line.includes(w.text)) w.resolve();
        done();
      },
    }),
  );
  const logged = (text: string) =>
    new Promise<void>((resolve) => {
      if (lines.some((l) => l.includes(text))) resolve();
      else waiters.push({ text, resolve });
    });

  beforeAll(async () => {
    bus = await startTestBus();
    nc = bus.nc;
  }, 30_000);
  afterAll(async () => {
    auth?.stop();
    await bus?.destroy();
  });

  it("fails closed before the bucket exists, then verifies, then honours a revoke", async () => {
    const started = await startServiceAuth({ config, nc, log });
    auth = started;
    const minted = mintApiKey();
    const early = await failure(started.authenticate(minted.token));
    expect(early.code).toBe(Code.Unavailable);

    const ready = logged("API key verification ready");
    const kv = await nc.jetstream().views.kv(buckets.permission.name);
    await kv.put(buckets.permission.apiKeyKey(minted.id), record(minted));
    await ready;
    const p = await auth.authenticate(minted.token);
    expect(p).toMatchObject({ agentId: "a1", userId: "u1", roles: ["agent"], keyId: minted.id });

    const wrongSecret = `${minted.token.slice(0, -2)}AA`;
    expect((await failure(auth.authenticate(wrongSecret))).rawMessage).toContain("unknown API key");
    const jwt = await failure(auth.authenticate("a.b.c"));
    expect(jwt.code).toBe(Code.Unauthenticated);
    expect(jwt.rawMessage).toContain("bearer token rejected");

    await kv.put(buckets.permission.apiKeyKey(minted.id), record(minted, true));
    // Within a second, polling with pauses: a loop of calls that resolve at once would never let
    // the watch that carries the revoke run.
    const error = await eventually(
      () => failure(started.authenticate(minted.token)),
      1000,
      "the revoke to be seen",
    );
    expect(error.rawMessage).toContain("has been revoked");
    expect(lines.join("")).not.toContain(minted.token);
  });

  it("still sees a revoke made after the NATS server restarted", async () => {
    if (!auth) throw new Error("the previous test starts auth");
    const minted = mintApiKey();
    const kv = await nc.jetstream().views.kv(buckets.permission.name, { bindOnly: true });
    await kv.put(buckets.permission.apiKeyKey(minted.id), record(minted));
    const verify = auth.authenticate;
    await eventually(() => verify(minted.token), 1000, "the new key to verify");
    const reconnected = (async () => {
      for await (const status of nc.status()) if (status.type === "reconnect") return;
    })();
    await bus.nats.stop();
    await bus.nats.start();
    const rebuilt = logged("KV snapshot rebuilt after reconnect");
    await reconnected;
    await rebuilt;
    await kv.put(buckets.permission.apiKeyKey(minted.id), record(minted, true));
    const error = await eventually(
      async () => {
        const refused = await failure(verify(minted.token));
        expect(refused.rawMessage).toContain("has been revoked");
        return refused;
      },
      1000,
      "the revoke to be seen",
    );
    expect(error.rawMessage).toContain("has been revoked");
  }, 20_000);
});

describe("serviceToken", () => {
  it("prefers TOOLMESH_SERVICE_TOKEN, then <dataDir>/service.token, else undefined", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "toolmesh-auth-"));
    try {
      expect(serviceToken({ dataDir: dir })).toBeUndefined();
      await writeFile(path.join(dir, "service.token"), "tmk_from_file\n");
      expect(serviceToken({ dataDir: dir })).toBe("tmk_from_file");
      expect(serviceToken({ dataDir: dir, serviceToken: "tmk_env" })).toBe("tmk_env");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
