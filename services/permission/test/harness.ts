import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { buckets } from "@toolmesh/nats";
import { PermissionService, ToolSchema } from "@toolmesh/proto";
import { type ServiceProcess, startNats, startService, type TestNats } from "@toolmesh/testkit";
import { SignJWT } from "jose";
import { connect, type KV, type NatsConnection } from "nats";
import { tableTools } from "../../../libs/policy/test/decision-table.js";

/** A real nats-server and a real permission process, with the tools of the decision table. */
export interface PermissionStack {
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
    // The Registry service owns this bucket; the test writes the table's tools into it directly.
    const registryKv = await nc.jetstream().views.kv(buckets.registry.name);
    for (const t of tableTools) {
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
    const jwtSecret = randomBytes(32).toString("hex");
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
