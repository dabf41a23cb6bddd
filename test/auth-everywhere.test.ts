import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { type RunningStack, startStack } from "@toolmesh/launcher";
import {
  AuditService,
  CallbackService,
  DispatcherService,
  PermissionService,
  RegistryService,
} from "@toolmesh/proto";
import { as, eventually, refusedJwts, repoRoot, testSigner } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Every service of a real stack, started as `npm start` does, refuses the same bad credentials
// and the same agent on admin RPCs: authentication is one shared lib, and this proves each
// service actually runs it.
const signer = testSigner();
let stack: RunningStack;
let dataDir: string;

function url(name: string): string {
  const endpoint = stack.endpoints.find((e) => e.name === name);
  if (!endpoint?.url) throw new Error(`${name} is not running`);
  return endpoint.url;
}

/** One cheap authenticated RPC per service. */
function probes(): Record<string, (token: string | undefined) => Promise<unknown>> {
  const t = (name: string) => createGrpcTransport({ baseUrl: url(name) });
  const h = (token: string | undefined) =>
    token === undefined ? {} : { headers: { authorization: token } };
  return {
    registry: (token) => createClient(RegistryService, t("registry")).listTools({}, h(token)),
    permission: (token) =>
      createClient(PermissionService, t("permission")).listApiKeys({}, h(token)),
    dispatcher: (token) =>
      createClient(DispatcherService, t("dispatcher")).dispatch({ tool: "none" }, h(token)),
    audit: (token) => createClient(AuditService, t("audit")).queryRecords({}, h(token)),
    callback: (token) =>
      createClient(CallbackService, t("callback")).getOutcome({ callId: "x" }, h(token)),
  };
}

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-auth-"));
  stack = await startStack({
    root: repoRoot,
    natsPort: -1,
    dataDir,
    env: {
      TOOLMESH_PERMISSION_PORT: "0",
      TOOLMESH_REGISTRY_PORT: "0",
      TOOLMESH_DISPATCHER_PORT: "0",
      TOOLMESH_AUDIT_PORT: "0",
      TOOLMESH_CALLBACK_PORT: "0",
      TOOLMESH_JWT_SECRET: signer.secret,
    },
    startTimeoutMs: 60_000,
    say: () => {},
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("authentication on every service", () => {
  it("refuses missing, malformed, expired, wrong-audience and unknown credentials", async () => {
    const refused = await refusedJwts(signer.secret, { sub: "ops", roles: ["admin"] });
    const bad: Record<string, string | undefined> = {
      missing: undefined,
      malformed: "Token abc",
      "expired JWT": `Bearer ${refused.expired}`,
      "wrong-audience JWT": `Bearer ${refused.wrongAudience}`,
      "unknown API key": "Bearer tmk_0123456789abcdef_notARealSecretAtAllButLongEnough0000000",
    };
    for (const [service, probe] of Object.entries(probes())) {
      for (const [kind, token] of Object.entries(bad)) {
        expect(await codeOf(probe(token)), `${service} with a ${kind} token`).toBe(
          Code.Unauthenticated,
        );
      }
    }
  });

  it("lets a valid admin token through on every service", async () => {
    const admin = `Bearer ${stack.adminToken}`;
    const viaJwt = `Bearer ${await signer.token("ops", ["admin"])}`;
    for (const [service, probe] of Object.entries(probes())) {
      for (const token of [admin, viaJwt]) {
        expect(await codeOf(probe(token)), service).not.toBe(Code.Unauthenticated);
      }
    }
  });

  it("keeps an agent out of admin RPCs, and a revoked key stops working everywhere within a second", async () => {
    const admin = as(stack.adminToken ?? "");
    const permission = createClient(
      PermissionService,
      createGrpcTransport({ baseUrl: url("permission") }),
    );
    const created = await permission.createApiKey({ agentId: "agent-7", name: "auth test" }, admin);
    const agent = as(created.secret);
    const t = (name: string) => createGrpcTransport({ baseUrl: url(name) });
    const adminOnly: [string, () => Promise<unknown>][] = [
      [
        "registry.RegisterTool",
        () => createClient(RegistryService, t("registry")).registerTool({}, agent),
      ],
      ["permission.Grant", () => permission.grant({}, agent)],
      ["permission.CreateApiKey", () => permission.createApiKey({ agentId: "x" }, agent)],
      ["audit.QueryRecords", () => createClient(AuditService, t("audit")).queryRecords({}, agent)],
      [
        "dispatcher.StartTool",
        () => createClient(DispatcherService, t("dispatcher")).startTool({ tool: "x" }, agent),
      ],
    ];
    for (const [rpc, call] of adminOnly)
      expect(await codeOf(call()), rpc).toBe(Code.PermissionDenied);

    const revokedAt = performance.now();
    await permission.revokeApiKey({ id: created.apiKey?.id ?? "" }, admin);
    for (const [service, probe] of Object.entries(probes())) {
      // Each service learns of the revoke through its own watch; poll it, bounded by one second.
      await eventually(
        async () =>
          expect(await codeOf(probe(`Bearer ${created.secret}`)), `${service} after revoke`).toBe(
            Code.Unauthenticated,
          ),
        1000 - (performance.now() - revokedAt),
        `${service} refusing the revoked key`,
        0,
      );
    }
    expect(performance.now() - revokedAt).toBeLessThan(1000);
  });

  it("never writes a token into any service's log", async () => {
    const secrets = [
      stack.adminToken as string,
      (await readFile(path.join(dataDir, "service.token"), "utf8")).trim(),
    ];
    for (const endpoint of stack.endpoints) {
      const log = await readFile(path.join(dataDir, "logs", `${endpoint.name}.log`), "utf8");
      for (const s of secrets) expect(log.includes(s), `${endpoint.name} log`).toBe(false);
      // The secret half alone must not appear either.
      for (const s of secrets)
        expect(log.includes(s.split("_").slice(2).join("_")), endpoint.name).toBe(false);
    }
  });
});
