import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { buckets } from "@toolmesh/nats";
import { PermissionService, RegistryService, ToolSchema } from "@toolmesh/proto";
import {
  repoRoot,
  type ServiceProcess,
  startNats,
  startService,
  type TestNats,
} from "@toolmesh/testkit";
import { SignJWT } from "jose";
import { connect, type KV, type NatsConnection } from "nats";
import { tableTools } from "../../../libs/policy/test/decision-table.js";

/** True when the Registry service exists in this checkout, so tests use it over raw KV writes. */
export const registryAvailable = existsSync(
  path.join(repoRoot, "services", "registry", "src", "main.ts"),
);

/**
 * A real nats-server and a real permission process, with the tools of the decision table:
 * registered through the real Registry service when it exists, else written into its bucket.
 */
export interface PermissionStack {
  /** The Registry process, when registryAvailable. */
  registry: ServiceProcess | undefined;
  registryClient: Client<typeof RegistryService> | undefined;
  nats: TestNats;
  nc: NatsConnection;
  permissionKv: KV;
  registryKv: KV;
  service: ServiceProcess;
  dataDir: string;
  jwtSecret: string;
  adminToken: string;
  serviceToken: string;
  client: Client<typeof PermissionService>;
  /** Call options carrying a bearer token. */
  as(token: string): { headers: { authorization: string } };
  stop(): Promise<void>;
}

export async function startPermissionStack(): Promise<PermissionStack> {
  const nats = await startNats();
  const cleanups: (() => Promise<unknown>)[] = [() => nats.destroy()];
  try {
    const nc = await connect({ servers: nats.url });
    cleanups.unshift(() => nc.close());
    const jwtSecret = randomBytes(32).toString("hex");
    let registry: ServiceProcess | undefined;
    let registryClient: Client<typeof RegistryService> | undefined;
    if (registryAvailable) {
      registry = await startService("registry", {
        NATS_URL: nats.url,
        TOOLMESH_REGISTRY_PORT: "0",
        TOOLMESH_JWT_SECRET: jwtSecret,
      });
      const started = registry;
      cleanups.unshift(() => started.stop());
      registryClient = createClient(
        RegistryService,
        createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1" }),
      );
      await registerTableTools(
        registryClient,
        await mintJwt(jwtSecret, { sub: "setup", roles: ["admin"] }),
      );
    }
    const registryKv = await nc.jetstream().views.kv(buckets.registry.name);
    // Without the Registry service, the test writes the table's tools into its bucket directly.
    for (const t of registry ? [] : tableTools) {
      await registryKv.put(
        buckets.registry.toolKey(t.name),
        toBinary(
          ToolSchema,
          create(ToolSchema, {
            spec: { name: t.name, requiredScopes: t.requiredScopes, description: "table tool" },
            groups: t.groups,
          }),
        ),
      );
    }
    const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-permission-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const service = await startService("permission", {
      NATS_URL: nats.url,
      TOOLMESH_PERMISSION_PORT: "0",
      TOOLMESH_DATA_DIR: dataDir,
      TOOLMESH_JWT_SECRET: jwtSecret,
    });
    cleanups.unshift(() => service.stop());
    const permissionKv = await nc.jetstream().views.kv(buckets.permission.name, { bindOnly: true });
    const adminToken = (await readFile(path.join(dataDir, "admin.token"), "utf8")).trim();
    const serviceToken = (await readFile(path.join(dataDir, "service.token"), "utf8")).trim();
    const client = createClient(
      PermissionService,
      createConnectTransport({ baseUrl: service.url, httpVersion: "1.1" }),
    );
    return {
      registry,
      registryClient,
      nats,
      nc,
      permissionKv,
      registryKv,
      service,
      dataDir,
      jwtSecret,
      adminToken,
      serviceToken,
      client,
      as: (token) => ({ headers: { authorization: `Bearer ${token}` } }),
      async stop() {
        for (const cleanup of cleanups) await cleanup().catch(() => {});
      },
    };
  } catch (error) {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw error;
  }
}

/** A JWT as an identity provider would mint it. */
export function mintJwt(
  secret: string,
  claims: { sub: string; roles?: string[]; onBehalfOf?: string },
  options: { audience?: string; expiresIn?: string | number } = {},
): Promise<string> {
  const jwt = new SignJWT({
    roles: claims.roles ?? ["agent"],
    ...(claims.onBehalfOf ? { on_behalf_of: claims.onBehalfOf } : {}),
  })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claims.sub)
    .setIssuer("toolmesh")
    .setAudience(options.audience ?? "toolmesh")
    .setIssuedAt();
  jwt.setExpirationTime(options.expiresIn ?? "5m");
  return jwt.sign(new TextEncoder().encode(secret));
}

/** Registers the decision table's tools, and groups holding them, through the Registry. */
async function registerTableTools(
  client: Client<typeof RegistryService>,
  adminJwt: string,
): Promise<void> {
  const options = { headers: { authorization: `Bearer ${adminJwt}` } };
  for (const t of tableTools) {
    await client.registerTool(
      {
        tool: {
          name: t.name,
          description: `The ${t.name} tool of the decision table`,
          category: "test",
          inputSchema: { type: "object", properties: {} },
          requiredScopes: t.requiredScopes,
          runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:7200" } } },
        },
      },
      options,
    );
  }
  const groups = new Map<string, string[]>();
  for (const t of tableTools)
    for (const g of t.groups) groups.set(g, [...(groups.get(g) ?? []), t.name]);
  for (const [name, tools] of groups) {
    await client.putGroup({ group: { name, description: `The ${name} group`, tools } }, options);
  }
}
