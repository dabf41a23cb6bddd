import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  DispatcherService,
  Effect,
  PermissionService,
  PrincipalKind,
  RegistryService,
  ResourceKind,
} from "@toolmesh/proto";
import {
  freePort,
  type ServiceProcess,
  startNats,
  startService,
  type TestNats,
} from "@toolmesh/testkit";
import { SignJWT } from "jose";
import { connect, type NatsConnection } from "nats";

/** nats-server, registry, permission and dispatcher as real processes. */
export interface DispatchStack {
  nats: TestNats;
  nc: NatsConnection;
  registry: ServiceProcess;
  permission: ServiceProcess;
  /** The current dispatcher process (replaced by restartDispatcher). */
  dispatcher: ServiceProcess;
  /** Stops the dispatcher and starts a new one on the same ports. */
  restartDispatcher(): Promise<void>;
  /** The grpc-js fast-path port of the dispatcher. */
  dispatcherGrpcPort: number;
  jwtSecret: string;
  adminToken: string;
  registryClient: Client<typeof RegistryService>;
  permissionClient: Client<typeof PermissionService>;
  dispatcherClient(transport?: Transport): Client<typeof DispatcherService>;
  /** A JWT for an agent with the `agent` role. */
  agentToken(agentId: string, extra?: { roles?: string[]; onBehalfOf?: string }): Promise<string>;
  /** Lets an agent call every tool with every scope. */
  grantAll(agentId: string): Promise<void>;
  as(token: string): { headers: { authorization: string } };
  stop(): Promise<void>;
}

/** Starts the stack; every process is stopped by stop() even when a start fails half-way. */
export async function startDispatchStack(
  dispatcherEnv: Record<string, string> = {},
): Promise<DispatchStack> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    const nats = await startNats();
    cleanups.push(() => nats.destroy());
    const nc = await connect({ servers: nats.url });
    cleanups.push(() => nc.close());
    const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-dispatch-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const jwtSecret = randomBytes(32).toString("hex");
    const common = {
      NATS_URL: nats.url,
      TOOLMESH_DATA_DIR: dataDir,
      TOOLMESH_JWT_SECRET: jwtSecret,
      LOG_LEVEL: "info",
    };
    const permission = await startService("permission", {
      ...common,
      TOOLMESH_PERMISSION_PORT: "0",
    });
    cleanups.push(() => permission.stop());
    const [mainPort, fastPort] = [await freePort(), await freePort()];
    const startDispatcher = () =>
      startService("dispatcher", {
        ...common,
        TOOLMESH_DISPATCHER_PORT: String(mainPort),
        TOOLMESH_DISPATCHER_GRPC_PORT: String(fastPort),
        ...dispatcherEnv,
      });
    const [registry, firstDispatcher] = await Promise.all([
      startService("registry", { ...common, TOOLMESH_REGISTRY_PORT: "0" }),
      startDispatcher(),
    ]);
    let dispatcher = firstDispatcher;
    cleanups.push(
      () => registry.stop(),
      () => dispatcher.stop(),
    );
    await dispatcher.stdout.waitFor((l) => l.includes('"grpc_port"'), 10_000, "grpc port");
    const dispatcherGrpcPort = fastPort;
    const adminToken = (await readFile(path.join(dataDir, "admin.token"), "utf8")).trim();
    const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    const permissionClient = createClient(
      PermissionService,
      createGrpcTransport({ baseUrl: permission.url }),
    );
    const result: DispatchStack = {
      nats,
      nc,
      registry,
      permission,
      dispatcher,
      async restartDispatcher() {
        await dispatcher.stop();
        dispatcher = await startDispatcher();
        result.dispatcher = dispatcher;
      },
      dispatcherGrpcPort,
      jwtSecret,
      adminToken,
      registryClient: createClient(RegistryService, createGrpcTransport({ baseUrl: registry.url })),
      permissionClient,
      dispatcherClient: (transport) =>
        createClient(
          DispatcherService,
          transport ?? createGrpcTransport({ baseUrl: dispatcher.url }),
        ),
      agentToken: (agentId, extra = {}) =>
        mintJwt(jwtSecret, agentId, extra.roles ?? ["agent"], extra.onBehalfOf),
      async grantAll(agentId) {
        await permissionClient.grant(
          {
            grant: {
              principal: { kind: PrincipalKind.AGENT, id: agentId },
              resource: { kind: ResourceKind.GLOB, pattern: "**" },
              scopes: ["*"],
              effect: Effect.ALLOW,
              enabled: true,
            },
          },
          as(adminToken),
        );
      },
      as,
      stop,
    };
    return result;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A JWT as an identity provider would mint it. */
export function mintJwt(
  secret: string,
  sub: string,
  roles: string[],
  onBehalfOf?: string,
): Promise<string> {
  return new SignJWT({ roles, ...(onBehalfOf ? { on_behalf_of: onBehalfOf } : {}) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuer("toolmesh")
    .setAudience("toolmesh")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(secret));
}

export { createConnectTransport };
