import path from "node:path";
import { freePort } from "@toolmesh/config";
import type { NatsServerUser } from "./nats-config.js";
import { type NatsPlacement, NatsServer } from "./nats-server.js";
import { StackError } from "./stack-error.js";
import type { Supervisor } from "./supervisor.js";

/** How to run a JetStream cluster of local nats-servers. */
export interface NatsClusterOptions {
  /** How many nodes (3 for a cluster that survives the loss of one). */
  nodes: number;
  bin?: string;
  /**
   * The first node's client port; node n listens on it + n − 1 (4222, 4223, 4224), routes on that
   * + 2000 (6222 …) and monitoring on that + 4000 (8222 …). -1: every port is a free one.
   */
  clientPort: number;
  /** Node n keeps its store in <storeDir>/node-n. */
  storeDir: string;
  /** Node n's config is <configDir>/nats-server-n.conf. */
  configDir: string;
  /** Node n appends its output to <logDir>/nats-server-n.log. */
  logDir?: string;
  syncInterval?: string;
  maxFileStore?: number;
  /** Each node's GOMEMLIMIT (NatsServerOptions.memoryLimit). */
  memoryLimit?: number;
  users: NatsServerUser[];
  noAuthUser?: string;
  /** The password routes authenticate with (the same on every node). */
  routePassword: string;
  cwd: string;
  startTimeoutMs: number;
  warn?: (line: string) => void;
  /** Where each node runs (by index); loopback for a node without one. */
  placements?: (NatsPlacement | undefined)[];
}

/** What a node's /jsz says about the JetStream meta group. */
interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

const CLUSTER_NAME = "toolmesh";

/**
 * N nats-servers with JetStream, routed to each other on loopback: the three-node cluster a
 * deployment runs, on one machine. Each node is a NatsServer with its own store, ports and config;
 * the cluster is ready once every node reports healthy to its monitoring port, which nats-server
 * does only when its JetStream is current with an elected meta leader.
 */
export class NatsCluster {
  private constructor(
    readonly nodes: NatsServer[],
    private readonly startTimeoutMs: number,
  ) {}

  /** Picks the ports and writes nothing yet; start() runs the nodes. */
  static async create(options: NatsClusterOptions): Promise<NatsCluster> {
    const count = options.nodes;
    const fixed = options.clientPort > 0;
    const ports = async (base: number) =>
      Promise.all(Array.from({ length: count }, (_, i) => (fixed ? base + i : freePort())));
    const clientPorts = fixed
      ? await ports(options.clientPort)
      : Array.from({ length: count }, () => -1);
    const routePorts = await ports(options.clientPort + 2000);
    const monitorPorts = await ports(options.clientPort + 4000);
    const hostOf = (i: number) => options.placements?.[i]?.host ?? "127.0.0.1";
    const routes = routePorts.map((port, i) => `${hostOf(i)}:${port}`);
    const nodes = Array.from({ length: count }, (_, i) => {
      const n = i + 1;
      return new NatsServer({
        ...(options.bin ? { bin: options.bin } : {}),
        port: clientPorts[i] as number,
        storeDir: path.join(options.storeDir, `node-${n}`),
        configFile: path.join(options.configDir, `nats-server-${n}.conf`),
        ...(options.logDir ? { logPath: path.join(options.logDir, `nats-server-${n}.log`) } : {}),
        ...(options.syncInterval ? { syncInterval: options.syncInterval } : {}),
        ...(options.maxFileStore ? { maxFileStore: options.maxFileStore } : {}),
        ...(options.memoryLimit !== undefined ? { memoryLimit: options.memoryLimit } : {}),
        users: options.users,
        ...(options.noAuthUser ? { noAuthUser: options.noAuthUser } : {}),
        serverName: `toolmesh-${n}`,
        monitorPort: monitorPorts[i] as number,
        cluster: {
          name: CLUSTER_NAME,
          port: routePorts[i] as number,
          routes,
          user: "route",
          password: options.routePassword,
        },
        cwd: options.cwd,
        startTimeoutMs: options.startTimeoutMs,
        ...(options.warn ? { warn: options.warn } : {}),
        ...(options.placements?.[i] ? { placement: options.placements[i] } : {}),
      });
    });
    return new NatsCluster(nodes, options.startTimeoutMs);
  }

  /** Every node's client URL. */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** The comma-separated list a service's NATS_URL takes. */
  get url(): string {
    return this.urls.join(",");
  }

  /** Starts every node together (each needs its peers for a meta leader) and waits until ready. */
  async start(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.start()));
    await this.ready(this.startTimeoutMs);
  }

  /**
   * Resolves once every running node reports healthy: JetStream current with an elected meta
   * leader. Streams with 3 replicas cannot be created before that.
   */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const node of this.nodes) {
      if (!node.current?.running) continue;
      let last = "";
      for (;;) {
        const res = await fetch(`${node.monitorUrl}/healthz`).catch((e: unknown) => e as Error);
        if (!(res instanceof Error) && res.ok) break;
        last = res instanceof Error ? res.message : `HTTP ${res.status} ${await res.text()}`;
        if (Date.now() > deadline) {
          throw new StackError(
            `nats-server ${node.serverName} did not become healthy within ${timeoutMs} ms: ${last}`,
          );
        }
        // /healthz has no way to wait for a change; ask again shortly.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** The server name of the JetStream meta leader, as the first node that answers sees it. */
  async metaLeader(): Promise<string | undefined> {
    for (const node of this.nodes) {
      if (!node.current?.running) continue;
      const jsz = await fetch(`${node.monitorUrl}/jsz`, { signal: AbortSignal.timeout(2000) })
        .then((res) => res.json() as Promise<Jsz>)
        .catch(() => undefined);
      const leader = jsz?.meta_cluster?.leader;
      if (leader) return leader;
    }
    return undefined;
  }

  /** Restarts any node that dies on its own, as NatsServer.supervise does for one. */
  supervise(supervisor: (node: NatsServer, n: number) => Supervisor): void {
    for (const [i, node] of this.nodes.entries()) node.supervise(supervisor(node, i + 1));
  }

  unsupervise(): void {
    for (const node of this.nodes) node.unsupervise();
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}
