// The bus's first-start step for containers (docker-compose's bus-init service, dist/bus-init.mjs):
// what the launcher does before it starts nats-server under npm start, and nothing else. It
// creates each process's nkey under <data dir>/bus (mode 0600, kept across runs) and writes the
// nats-server config with their permissions, for a nats-server in another container to read.
// With TOOLMESH_NATS_CLUSTER_ROUTES (every node's route address, host:port) it writes one config
// per node, nats-server-<n>.conf, each a node of one JetStream cluster (compose's cluster profile).
import path from "node:path";
import {
  bytes,
  commonConfig,
  int,
  list,
  loadConfig,
  loadOrExit,
  str,
  syncInterval,
} from "@toolmesh/config";
import { isBusUser, natsPermissions, processUsers } from "@toolmesh/nats";
import { busDir, ensureBusCredentials, ensureRoutePassword } from "./bus-credentials.js";
import { type NatsServerUser, writeNatsConfig } from "./nats-config.js";

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    natsHost: str("TOOLMESH_NATS_HOST", "0.0.0.0"),
    natsPort: int("TOOLMESH_NATS_PORT", 4222, { min: 1, max: 65535 }),
    natsStoreDir: str("TOOLMESH_NATS_STORE_DIR", "/data"),
    natsSyncInterval: syncInterval("TOOLMESH_NATS_SYNC_INTERVAL", "always"),
    natsMaxFileStore: bytes("TOOLMESH_NATS_MAX_FILE_STORE", 1024 ** 4, { min: 1024 ** 3 }),
    clusterRoutes: list("TOOLMESH_NATS_CLUSTER_ROUTES", []),
  }),
);

const credentials = ensureBusCredentials(config.dataDir, [...processUsers, "agent", "admin"]);
const users = credentials.map(
  (c): NatsServerUser => ({
    name: c.user,
    nkey: c.publicKey,
    ...(isBusUser(c.user) ? { permissions: natsPermissions(c.user) } : {}),
  }),
);
const common = {
  host: config.natsHost,
  port: config.natsPort,
  storeDir: config.natsStoreDir,
  syncInterval: config.natsSyncInterval,
  maxFileStore: config.natsMaxFileStore,
  users,
  monitorPort: 8222,
};
const routes = config.clusterRoutes;
const files: string[] = [];
if (routes.length === 0) {
  files.push(path.join(busDir(config.dataDir), "nats-server.conf"));
  writeNatsConfig(files[0] as string, common);
} else {
  const password = ensureRoutePassword(config.dataDir);
  for (const [i, route] of routes.entries()) {
    const file = path.join(busDir(config.dataDir), `nats-server-${i + 1}.conf`);
    writeNatsConfig(file, {
      ...common,
      serverName: `toolmesh-${i + 1}`,
      cluster: {
        name: "toolmesh",
        port: Number(route.split(":").at(-1)),
        routes,
        user: "route",
        password,
      },
    });
    files.push(file);
  }
}
process.stdout.write(
  `${JSON.stringify({ level: 30, service: "bus-init", config: files, users: credentials.map((c) => c.user), msg: "bus credentials and nats-server config written" })}\n`,
);
