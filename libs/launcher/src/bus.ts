import path from "node:path";
import { isBusUser, natsPermissions, processUsers } from "@toolmesh/nats";
import { busDir, ensureBusCredentials, ensureRoutePassword } from "./bus-credentials.js";
import { NatsCluster } from "./nats-cluster.js";
import type { NatsServerUser } from "./nats-config.js";
import { type NatsPlacement, NatsServer } from "./nats-server.js";
import type { Supervisor } from "./supervisor.js";

/** How the launcher runs the bus: one nats-server, or a cluster of them. */
export interface LocalBusOptions {
  root: string;
  dataDir: string;
  natsBin?: string | undefined;
  natsPort: number;
  natsSyncInterval?: string | undefined;
  natsMaxFileStore?: number | undefined;
  /** GOMEMLIMIT of every nats-server (bytes; 0: none); DEFAULT_NATS_MEMORY_LIMIT when unset. */
  natsMemoryLimit?: number | undefined;
  /** Nodes of a JetStream cluster; 1 (or undefined) runs a single nats-server. */
  clusterNodes?: number | undefined;
  /** Where each cluster node runs (tests put one in a network namespace of its own). */
  natsPlacements?: (NatsPlacement | undefined)[] | undefined;
  startTimeoutMs: number;
  say: (line: string) => void;
  /** The supervisor of one nats-server, named nats-server (or nats-server-<n> in a cluster). */
  supervisor: (name: string, node: NatsServer) => Supervisor;
}

/** A local bus the launcher started. */
export interface LocalBus {
  /** What services take as NATS_URL: one URL, or every node's, comma-separated. */
  url: string;
  /** The single nats-server, when not a cluster. */
  server?: NatsServer;
  /** The cluster, when one runs. */
  cluster?: NatsCluster;
  /** The nkey seed file of each bus user. */
  credentials: Record<string, string>;
  /** Every nats-server, for stack.json. */
  nodes: NatsServer[];
  unsupervise(): void;
  stop(): Promise<void>;
}

/**
 * Starts the local bus with the bus's credentials and permission table, and has any nats-server
 * that dies on its own restarted by its supervisor (services reconnect and ride through).
 */
export async function startLocalBus(options: LocalBusOptions): Promise<LocalBus> {
  const { dataDir, say } = options;
  const credentials = ensureBusCredentials(dataDir, [...processUsers, "agent", "admin"]);
  const users = credentials.map(
    (c): NatsServerUser => ({
      name: c.user,
      nkey: c.publicKey,
      // admin is the operators' key (nats CLI); every other user gets the table's permissions.
      ...(isBusUser(c.user) ? { permissions: natsPermissions(c.user) } : {}),
    }),
  );
  const seedFiles = Object.fromEntries(credentials.map((c) => [c.user, c.seedFile]));
  const common = {
    ...(options.natsBin ? { bin: options.natsBin } : {}),
    syncInterval: options.natsSyncInterval ?? "always",
    ...(options.natsMaxFileStore ? { maxFileStore: options.natsMaxFileStore } : {}),
    ...(options.natsMemoryLimit !== undefined ? { memoryLimit: options.natsMemoryLimit } : {}),
    users,
    cwd: options.root,
    startTimeoutMs: options.startTimeoutMs,
    warn: (line: string) => say(`WARNING: ${line}`),
  };
  const logDir = path.join(dataDir, "logs");
  const sync = options.natsSyncInterval ?? "always";

  if ((options.clusterNodes ?? 1) > 1) {
    const cluster = await NatsCluster.create({
      ...common,
      nodes: options.clusterNodes as number,
      clientPort: options.natsPort,
      storeDir: path.join(dataDir, "nats"),
      configDir: busDir(dataDir),
      logDir,
      routePassword: ensureRoutePassword(dataDir),
      ...(options.natsPlacements ? { placements: options.natsPlacements } : {}),
    });
    try {
      await cluster.start();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    cluster.supervise((node, n) => options.supervisor(`nats-server-${n}`, node));
    say(
      `NATS JetStream cluster of ${cluster.nodes.length} at ${cluster.url} (stores under ${path.join(dataDir, "nats")}, sync ${sync}, credentials in ${busDir(dataDir)})`,
    );
    return {
      url: cluster.url,
      cluster,
      credentials: seedFiles,
      nodes: cluster.nodes,
      unsupervise: () => cluster.unsupervise(),
      stop: () => cluster.stop(),
    };
  }

  const storeDir = path.join(dataDir, "nats");
  const server = new NatsServer({
    ...common,
    port: options.natsPort,
    storeDir,
    configFile: path.join(busDir(dataDir), "nats-server.conf"),
    logPath: path.join(logDir, "nats-server.log"),
  });
  await server.start();
  server.supervise(options.supervisor("nats-server", server));
  say(
    `nats-server with JetStream at ${server.url} (store ${storeDir}, sync ${sync}, credentials in ${busDir(dataDir)})`,
  );
  return {
    url: server.url,
    server,
    credentials: seedFiles,
    nodes: [server],
    unsupervise: () => server.unsupervise(),
    stop: () => server.stop(),
  };
}
