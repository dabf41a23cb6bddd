import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { isBusUser } from "@toolmesh/nats";
import { ensureBundles } from "./bundles.js";
import { type LocalBus, startLocalBus } from "./bus.js";
import { seedFile } from "./bus-credentials.js";
import { LauncherMetrics, type MetricsListener, serveLauncherMetrics } from "./launcher-metrics.js";
import type { NatsCluster } from "./nats-cluster.js";
import type { NatsPlacement, NatsServer } from "./nats-server.js";
import { type Replicas, replicaEnv, replicaName, replicasOf } from "./replicas.js";
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from "./restart-policy.js";
import { ServiceProcess } from "./service-process.js";
import { availableServices, type ServiceSpec } from "./services.js";
import { StackError } from "./stack-error.js";
import {
  type RunningEndpoint,
  readTokenFile,
  type StackFile,
  tokenFiles,
  writeStackFile,
} from "./stack-file.js";
import { type StackFailure, StackSupervision } from "./stack-supervision.js";

export interface StackOptions {
  /** The repository root. */
  root: string;
  /** Use this NATS server; when undefined a local nats-server is started with JetStream. */
  natsUrl?: string | undefined;
  /** Port of the local nats-server; -1 picks a free one. */
  natsPort: number;
  /** The nats-server binary; .toolmesh/bin/nats-server, NATS_SERVER_BIN, then PATH when unset. */
  natsBin?: string;
  /** JetStream's fsync interval for the local nats-server: `always` (default) or a duration. */
  natsSyncInterval?: string;
  /** JetStream's file store limit for the local nats-server (bytes; 1 TiB by default). */
  natsMaxFileStore?: number;
  /** GOMEMLIMIT of the local nats-server (bytes; 0: none); 256 MiB by default. */
  natsMemoryLimit?: number;
  /**
   * Nodes of a local JetStream cluster (TOOLMESH_CLUSTER); 1 or undefined runs one nats-server.
   * With a cluster every stream and bucket gets 3 replicas (TOOLMESH_JETSTREAM_REPLICAS).
   */
  clusterNodes?: number;
  /** Where each cluster node runs; loopback when unset (a test's partition moves one). */
  natsPlacements?: (NatsPlacement | undefined)[];
  /**
   * Processes of each service but the console (2 with a cluster, else 1), or of each named
   * service: replica n is named <service>-n and listens on its service's port + 10·(n − 1).
   */
  replicas?: Replicas;
  /** Where state lives: NATS store, tokens, memory files, logs, stack.json. */
  dataDir: string;
  /** Extra environment for every service (ports, secrets, log level). */
  env: NodeJS.ProcessEnv;
  /** Extra environment for one service, by name; a replica's name (dispatcher-2) adds to it. */
  serviceEnv?: Record<string, NodeJS.ProcessEnv>;
  /** Only these services (in stack order); every one that exists when undefined. */
  services?: string[];
  /** Every service on a free port instead of its configured one. */
  freePorts?: boolean;
  /** Give up when a process is not healthy after this long. */
  startTimeoutMs: number;
  /** When a process that exits on its own is restarted, and when the stack gives up on it. */
  restartPolicy?: RestartPolicy;
  /** Where the launcher serves its /metrics: a port (0: a free one) on a host (127.0.0.1); none when unset. */
  metrics?: { host: string; port: number };
  /** Called for progress lines meant for a person. */
  say: (line: string) => void;
}

export interface RunningStack {
  natsUrl: string;
  /** The local nats-server, when the stack started one node. */
  nats?: NatsServer;
  /** The local JetStream cluster, when the stack started one. */
  cluster?: NatsCluster;
  /**
   * The nkey seed file of each bus user, when the stack started its own nats-server: one per
   * process, `agent` (read-only callback subscriber) and `admin` (everything; for operators).
   */
  busCredentials: Record<string, string>;
  endpoints: RunningEndpoint[];
  /** Every service process, by name. */
  services: Map<string, ServiceProcess>;
  /** The admin token written by the permission service's bootstrap, if there is one. */
  adminToken?: string;
  /** True when this start created the admin token (the data directory was new). */
  adminTokenCreated: boolean;
  /** What was last written to <dataDir>/stack.json (again after each restart). */
  readonly stackFile: StackFile;
  /** The launcher's Prometheus endpoint (restarts of each process), when it serves one. */
  metricsUrl?: string;
  /**
   * Resolves when the stack has to stop: a process kept crashing (it exited more often than the
   * restart policy allows within its window). Every other exit is restarted.
   */
  failed: Promise<StackFailure>;
  stop(): Promise<void>;
}

/**
 * Starts NATS (unless given) and the services, and waits until all are healthy. Permission goes
 * first, because its bootstrap writes the tokens the others read; the rest start together. From
 * then on each process that exits on its own is restarted by its supervisor.
 */
export async function startStack(options: StackOptions): Promise<RunningStack> {
  const { root, dataDir, say } = options;
  const logDir = path.join(dataDir, "logs");
  mkdirSync(logDir, { recursive: true });
  const hadAdminToken = existsSync(tokenFiles(dataDir).admin);
  // Services start from dist/ (plain JavaScript) when it is current; a stale one is rebuilt first.
  ensureBundles(
    root,
    selectServices(root, options.services).map((s) => s.name),
    say,
  );
  let bus: LocalBus | undefined;
  let metricsListener: MetricsListener | undefined;
  const services = new Map<string, ServiceProcess>();
  // Written once every process is up; each restart writes it again.
  let rewrite: (() => void) | undefined;
  const metrics = new LauncherMetrics();
  const supervision = new StackSupervision({
    policy: options.restartPolicy ?? DEFAULT_RESTART_POLICY,
    metrics,
    say,
    changed: () => rewrite?.(),
  });
  const stopAll = async () => {
    rewrite = undefined;
    // No restart may begin once stopping has (Ctrl-C reaches every child at once).
    for (const service of services.values()) service.unsupervise();
    bus?.unsupervise();
    for (const service of [...services.values()].reverse()) await service.stop();
    await bus?.stop();
    await metricsListener?.close();
  };

  try {
    let natsUrl = options.natsUrl;
    let busCredentials: Record<string, string> = {};
    if (!natsUrl) {
      bus = await startLocalBus({
        root,
        dataDir,
        natsBin: options.natsBin,
        natsPort: options.natsPort,
        natsSyncInterval: options.natsSyncInterval,
        natsMaxFileStore: options.natsMaxFileStore,
        natsMemoryLimit: options.natsMemoryLimit,
        clusterNodes: options.clusterNodes,
        natsPlacements: options.natsPlacements,
        startTimeoutMs: options.startTimeoutMs,
        say,
        supervisor: (name, node) =>
          supervision.supervisor(name, {
            pid: () => node.current?.process.pid ?? 0,
            where: () => ` at ${node.url} (pid ${node.current?.process.pid}) with the same store`,
          }),
      });
      natsUrl = bus.url;
      busCredentials = bus.credentials;
    } else {
      say(`using NATS at ${natsUrl}`);
    }
    const nats = bus?.server;

    const specs = selectServices(root, options.services);
    const clusterNodes = bus?.cluster ? bus.nodes.length : 1;
    const replicas = options.replicas ?? (clusterNodes > 1 ? 2 : 1);
    const dispatchers = replicasOf({ name: "dispatcher" }, replicas);
    const shared: NodeJS.ProcessEnv = {
      ...(clusterNodes > 1
        ? { TOOLMESH_JETSTREAM_REPLICAS: String(Math.min(3, clusterNodes)) }
        : {}),
      // Each Dispatcher enforces its share of every rate limit.
      ...(dispatchers > 1 ? { TOOLMESH_DISPATCHER_REPLICAS: String(dispatchers) } : {}),
    };
    // Replica 1 of every service first, then the others: a replica's start finds its bucket made.
    const waves: ServiceProcess[][] = [];
    for (const spec of specs) {
      for (let replica = 1; replica <= replicasOf(spec, replicas); replica++) {
        const name = replicaName(spec.name, replica);
        const base: NodeJS.ProcessEnv = {
          ...process.env,
          ...shared,
          ...options.env,
          ...(options.freePorts && spec.portEnv ? { [spec.portEnv]: "0" } : {}),
          ...options.serviceEnv?.[spec.name],
        };
        const env: NodeJS.ProcessEnv = {
          ...base,
          ...replicaEnv(spec, replica, base, dataDir),
          ...(replica > 1 ? options.serviceEnv?.[name] : {}),
          NATS_URL: natsUrl,
          TOOLMESH_DATA_DIR: dataDir,
          // Its own credential, and no other way to authenticate that could be inherited.
          ...(bus && isBusUser(spec.name)
            ? {
                TOOLMESH_NATS_NKEY_FILE: seedFile(dataDir, spec.name),
                TOOLMESH_NATS_CREDS: "",
                TOOLMESH_NATS_USER: "",
                TOOLMESH_NATS_PASSWORD: "",
              }
            : {}),
        };
        const service = new ServiceProcess({
          name,
          service: spec.name,
          root,
          env,
          portEnv: spec.portEnv,
          logPath: path.join(logDir, `${name}.log`),
          startTimeoutMs: options.startTimeoutMs,
        });
        service.supervise(
          supervision.supervisor(name, {
            pid: () => service.pid,
            where: () => `${service.url ? ` at ${service.url}` : ""} (pid ${service.pid})`,
          }),
        );
        services.set(name, service);
        waves[replica - 1] = [...(waves[replica - 1] ?? []), service];
      }
    }
    for (const wave of waves) {
      const [first, ...rest] = wave;
      if (first?.name === "permission") await first.start();
      await Promise.all((first?.name === "permission" ? rest : wave).map((s) => s.start()));
    }

    const endpoints = endpointsOf(services);
    for (const e of endpoints) {
      say(`${e.name.padEnd(14)} ${e.url ?? "(subscriber, no port)"}  pid ${e.pid}`);
    }
    if (options.metrics) {
      metricsListener = await serveLauncherMetrics(
        metrics,
        options.metrics.host,
        options.metrics.port,
      );
      say(`the launcher's metrics (restarts of each process) at ${metricsListener.url}`);
    }
    const startedAt = new Date().toISOString();
    const write = () =>
      writeStackFile({
        dataDir,
        natsUrl,
        natsNodes: bus?.nodes ?? [],
        endpoints: endpointsOf(services),
        services: [...services.values()].map((s) => ({ process: s.name, service: s.service })),
        natsCredentials: busCredentials,
        processes: supervision.processes(),
        ...(metricsListener ? { launcherMetricsUrl: metricsListener.url } : {}),
        startedAt,
      });
    let stackFile = write();
    rewrite = () => {
      stackFile = write();
    };
    const adminToken = readTokenFile(tokenFiles(dataDir).admin);
    return {
      natsUrl,
      ...(nats ? { nats } : {}),
      ...(bus?.cluster ? { cluster: bus.cluster } : {}),
      busCredentials,
      endpoints,
      services,
      ...(adminToken ? { adminToken } : {}),
      adminTokenCreated: !hadAdminToken && adminToken !== undefined,
      get stackFile() {
        return stackFile;
      },
      ...(metricsListener ? { metricsUrl: metricsListener.url } : {}),
      failed: supervision.failed,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** Each process's address and pid now (a restarted one has a new pid). */
function endpointsOf(services: Map<string, ServiceProcess>): RunningEndpoint[] {
  return [...services.values()].map((s) => ({
    name: s.name,
    pid: s.pid,
    ...(s.url ? { url: s.url } : {}),
  }));
}

function selectServices(root: string, names: string[] | undefined): ServiceSpec[] {
  const available = availableServices(root);
  if (!names) return available;
  const unknown = names.filter((n) => !available.some((s) => s.name === n));
  if (unknown.length > 0) {
    throw new StackError(
      `no service named ${unknown.join(", ")}; available: ${available.map((s) => s.name).join(", ")}`,
    );
  }
  return available.filter((s) => names.includes(s.name));
}
