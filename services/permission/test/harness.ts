import type { Client } from "@connectrpc/connect";
import { buckets } from "@toolmesh/nats";
import type { PermissionService, RegistryService } from "@toolmesh/proto";
import {
  mintJwt,
  type ServiceProcess,
  startStack,
  type TestNats,
  type TestStack,
  tableTools,
} from "@toolmesh/testkit";
import type { KV, NatsConnection } from "nats";

/** A real nats-server, Registry and Permission processes, with the tools of the decision table. */
export interface PermissionStack {
  registry: ServiceProcess;
  registryClient: Client<typeof RegistryService>;
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
  /** Everything the permission and registry processes logged, restarts included. */
  logText(...names: string[]): Promise<string>;
  /** Call options carrying a bearer token. */
  as(token: string): { headers: { authorization: string } };
  stop(): Promise<void>;
}

export async function startPermissionStack(): Promise<PermissionStack> {
  const stack = await startStack({ services: ["permission", "registry"] });
  try {
    await registerTableTools(stack);
    // Permission follows the registry bucket asynchronously; a restart loads the whole table
    // before it reports SERVING, so no Check in a test races the watch.
    await stack.restart("permission");
    const views = stack.nc.jetstream().views;
    return {
      registry: stack.registry,
      registryClient: stack.registryClient,
      nats: stack.nats,
      nc: stack.nc,
      permissionKv: await views.kv(buckets.permission.name, { bindOnly: true }),
      registryKv: await views.kv(buckets.registry.name, { bindOnly: true }),
      service: stack.permission,
      dataDir: stack.dataDir,
      jwtSecret: stack.jwtSecret,
      adminToken: stack.adminToken,
      serviceToken: stack.serviceToken,
      client: stack.permissionClient,
      as: stack.as,
      logText: stack.logText,
      stop: stack.stop,
    };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

export { mintJwt };

/** Registers the decision table's tools, and groups holding them, through the Registry. */
async function registerTableTools(stack: TestStack): Promise<void> {
  const client = stack.registryClient;
  const options = stack.as(stack.adminToken);
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
