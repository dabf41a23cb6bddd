import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { loadConfig, syncInterval } from "@toolmesh/config";
import {
  freePort,
  type NatsPlacement,
  natsMemoryLimit,
  type Replicas,
  type RunningStack,
  readTokenFile,
  replicasOf,
  type ServiceProcess,
  type StackFailure,
  type StackFile,
  startStack as startLauncherStack,
  tokenFiles,
} from "@toolmesh/launcher";
import { credentialOptions } from "@toolmesh/nats";
import {
  AuditService,
  CallbackService,
  DispatcherService,
  PermissionService,
  RegistryService,
} from "@toolmesh/proto";
import { connect, type NatsConnection } from "nats";
import { toolAgentLinks } from "./agent-links.js";
import { type TestCluster, testCluster } from "./cluster.js";
import { mintJwt } from "./jwt.js";
import type { TestNats } from "./nats-server.js";
import { repoRoot } from "./repo-root.js";
import { allowAllSpec } from "./table-grants.js";

/** The processes a test stack runs unless told otherwise: the call chain. */
export const chainServices = ["permission", "registry", "dispatcher", "audit"];

export interface TestStackOptions {
  /** Which services to run (stack order is kept); the call chain when undefined. */
  services?: string[];
  /** Extra environment for every service. */
  env?: Record<string, string>;
  /** Extra environment for one service, by name. */
  serviceEnv?: Record<string, Record<string, string>>;
  /** The HS256 secret services verify JWTs with; random when undefined. */
  jwtSecret?: string;
  /** Nodes of a local JetStream cluster (3); one nats-server when undefined. */
  cluster?: number;
  /** Where each cluster node runs; loopback when unset (a partition test moves one). */
  natsPlacements?: (NatsPlacement | undefined)[];
  /**
   * Processes of each service, or of each named one (replica n is named <service>-n); 2 of each
   * with a cluster, else 1.
   */
  replicas?: Replicas;
  /**
   * A data directory of the caller's, kept by stop(): starting a stack again on it is a restart
   * with its history (NATS store, tokens, memory, the audit index). A temp one when undefined.
   */
  dataDir?: string;
  /** JetStream's fsync interval; TOOLMESH_NATS_SYNC_INTERVAL (as npm start reads it) when undefined. */
  natsSyncInterval?: string;
  /** How long each process may take to become ready (60 s by default). */
  startTimeoutMs?: number;
}

/** A whole toolmesh stack for a test: a nats-server and real service processes. */
export interface TestStack {
  /** The nats-server (with a cluster: its first node). */
  nats: TestNats;
  /** The cluster's nodes, when the stack runs one. */
  cluster?: TestCluster;
  /** Every NATS URL, comma-separated (what services take as NATS_URL). */
  natsUrl: string;
  /** A connection of the test's own as the bus's `admin` (every permission), closed by stop(). */
  nc: NatsConnection;
  /**
   * The nkey seed file of a bus user: a process (`dispatcher` …), `agent` (the read-only callback
   * subscriber) or `admin`. Connect with credentialOptions({ nkeyFile }) from @toolmesh/nats.
   */
  natsCredentialFile(user: string): string;
  dataDir: string;
  jwtSecret: string;
  /** The bootstrap admin API key (or a minted admin JWT without the permission service). */
  adminToken: string;
  /** The bootstrap service API key; empty without the permission service. */
  serviceToken: string;
  /** The port of the dispatcher's grpc-js listener. */
  dispatcherGrpcPort: number;
  /** Every process the stack runs, by name: dispatcher, dispatcher-2 … */
  processes: string[];
  /** A running service, by name; throws for one the stack does not run. */
  service(name: string): ServiceProcess;
  /** Shorthands for service("…"). */
  readonly registry: ServiceProcess;
  readonly permission: ServiceProcess;
  readonly dispatcher: ServiceProcess;
  /** Stops a service and starts it again on the same port. */
  restart(name: string): Promise<void>;
  /** The launcher's metrics endpoint (http://127.0.0.1:<port>/metrics): restarts of each process. */
  launcherMetricsUrl: string;
  /** What the launcher last wrote to <dataDir>/stack.json (again after each restart). */
  stackFile(): StackFile;
  /** Resolves when a process keeps crashing (more restarts within the window than the policy allows). */
  failed: Promise<StackFailure>;
  /** What the launcher said (npm start prints it): each restart, and each process back. */
  launcherLines: string[];
  /** Kept for the tests that restart the dispatcher with a new process. */
  restartDispatcher(): Promise<void>;
  /** A client of a service over gRPC (a fresh transport on each call). */
  client<S extends DescService>(service: S, name: string): Client<S>;
  readonly registryClient: Client<typeof RegistryService>;
  readonly permissionClient: Client<typeof PermissionService>;
  dispatcherClient(transport?: Transport): Client<typeof DispatcherService>;
  auditClient(): Client<typeof AuditService>;
  callbackClient(): Client<typeof CallbackService>;
  /** A JWT for an agent, with the `agent` role unless told otherwise. */
  agentToken(agentId: string, extra?: { roles?: string[]; onBehalfOf?: string }): Promise<string>;
  /** Lets an agent call every tool with every scope. */
  grantAll(agentId: string): Promise<void>;
  /** Call options carrying a bearer token. */
  as(token: string): { headers: { authorization: string } };
  /**
   * Everything the named services (every one when none is named) printed since the stack
   * started, restarts included: their log files under <dataDir>/logs.
   */
  logText(...names: string[]): Promise<string>;
  /** Stops every process and deletes the data directory (unless the caller gave it), even after a failed start. */
  stop(): Promise<void>;
}

/**
 * Starts a stack the way `npm start` does (the launcher), on free ports and a temp data dir.
 * Every test in every language starts its stack through this (Python and Go through
 * scripts/stack.ts --json).
 */
export async function startStack(options: TestStackOptions = {}): Promise<TestStack> {
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), "toolmesh-stack-")));
  const jwtSecret = options.jwtSecret ?? randomBytes(32).toString("hex");
  const names = options.services ?? chainServices;
  const dispatcherGrpcPort = names.includes("dispatcher") ? await freePort() : 0;
  // The tool agent and the Dispatcher call each other by URL: their ports are chosen up front.
  const serviceEnv = names.includes("tool-agent")
    ? await toolAgentLinks(options.serviceEnv)
    : options.serviceEnv;
  let running: RunningStack | undefined;
  let nc: NatsConnection | undefined;
  const launcherLines: string[] = [];
  const stop = async () => {
    await nc?.close().catch(() => {});
    await running?.stop();
    const refused = await refusedServices(dataDir);
    if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    if (refused.length > 0) {
      throw new Error(
        `nats-server refused a toolmesh process something it needed; give it in libs/nats/src/bus-access.ts:\n${refused.join("\n")}`,
      );
    }
  };
  try {
    const replicas = options.replicas ?? (options.cluster ? 2 : 1);
    running = await startLauncherStack({
      ...(options.cluster ? { clusterNodes: options.cluster } : {}),
      ...(options.natsPlacements ? { natsPlacements: options.natsPlacements } : {}),
      replicas,
      root: repoRoot,
      natsPort: -1,
      // As npm start reads it: fsync before every ack unless the environment says otherwise.
      natsSyncInterval:
        options.natsSyncInterval ??
        loadConfig({ value: syncInterval("TOOLMESH_NATS_SYNC_INTERVAL", "always") }).value,
      natsMemoryLimit: loadConfig({ value: natsMemoryLimit() }).value,
      dataDir,
      env: { LOG_LEVEL: "info", ...options.env, TOOLMESH_JWT_SECRET: jwtSecret },
      serviceEnv: {
        ...serviceEnv,
        dispatcher: {
          TOOLMESH_DISPATCHER_GRPC_PORT: String(dispatcherGrpcPort),
          ...serviceEnv?.dispatcher,
        },
        // The grpc-js port is the first Dispatcher's; the others serve everything on their main port.
        ...Object.fromEntries(
          Array.from({ length: replicasOf({ name: "dispatcher" }, replicas) - 1 }, (_, i) => [
            `dispatcher-${i + 2}`,
            {
              TOOLMESH_DISPATCHER_GRPC_PORT: "-1",
              // With the tool agent the first Dispatcher's port is chosen up front; its replicas
              // take free ones rather than that port + 10.
              ...(names.includes("tool-agent") ? { TOOLMESH_DISPATCHER_PORT: "0" } : {}),
              ...serviceEnv?.[`dispatcher-${i + 2}`],
            },
          ]),
        ),
      },
      services: names,
      freePorts: true,
      startTimeoutMs: options.startTimeoutMs ?? 60_000,
      metrics: { host: "127.0.0.1", port: 0 },
      say: (line) => launcherLines.push(line),
    });
    const launched = running;
    const nats = launched.nats ?? launched.cluster?.nodes[0];
    if (!nats) throw new Error("the test stack always starts its own nats-server");
    const processes = [...launched.services.keys()];
    const credentialFile = (user: string) => {
      const file = launched.busCredentials[user];
      if (!file) {
        throw new Error(
          `no bus credential named ${user}; there are ${Object.keys(launched.busCredentials).join(", ")}`,
        );
      }
      return file;
    };
    nc = await connect({
      servers: launched.natsUrl.split(","),
      // Rides through a NATS restart as the services do: a request made while it reconnects
      // would otherwise wait out nats.js's 2 s reconnect delay and time out.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ...credentialOptions({ nkeyFile: credentialFile("admin") }),
    });
    const files = tokenFiles(dataDir);
    const adminToken =
      launched.adminToken ?? (await mintJwt(jwtSecret, { sub: "test-admin", roles: ["admin"] }));
    const serviceToken = readTokenFile(files.service) ?? "";
    const service = (name: string) => {
      const found = launched.services.get(name);
      if (!found)
        throw new Error(`this test stack does not run ${name}; it runs ${processes.join(", ")}`);
      return found;
    };
    // One transport per service and contract: a restarted service keeps its port.
    const clients = new Map<string, unknown>();
    const client = <S extends DescService>(desc: S, name: string): Client<S> => {
      const key = `${desc.typeName}@${name}`;
      let found = clients.get(key) as Client<S> | undefined;
      if (!found) {
        found = createClient(desc, createGrpcTransport({ baseUrl: service(name).url }));
        clients.set(key, found);
      }
      return found;
    };
    const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    return {
      ...(launched.cluster ? { cluster: testCluster(launched.cluster) } : {}),
      natsUrl: launched.natsUrl,
      processes,
      nats: {
        url: nats.url,
        port: nats.clientPort,
        storeDir: path.join(dataDir, "nats"),
        get pid() {
          return nats.current?.process.pid ?? 0;
        },
        get readyMs() {
          return nats.readyMs;
        },
        get readyCpuMs() {
          return nats.readyCpuMs;
        },
        stop: () => nats.stop(),
        kill: () => nats.kill(),
        start: () => nats.start(),
        destroy: () => nats.stop(),
      },
      nc,
      natsCredentialFile: credentialFile,
      dataDir,
      jwtSecret,
      adminToken,
      serviceToken,
      dispatcherGrpcPort,
      service,
      get registry() {
        return service("registry");
      },
      get permission() {
        return service("permission");
      },
      get dispatcher() {
        return service("dispatcher");
      },
      restart: (name) => service(name).restart(),
      launcherMetricsUrl: launched.metricsUrl ?? "",
      stackFile: () => launched.stackFile,
      failed: launched.failed,
      launcherLines,
      restartDispatcher: () => service("dispatcher").restart(),
      client,
      get registryClient() {
        return client(RegistryService, "registry");
      },
      get permissionClient() {
        return client(PermissionService, "permission");
      },
      dispatcherClient: (transport) =>
        createClient(
          DispatcherService,
          transport ?? createGrpcTransport({ baseUrl: service("dispatcher").url }),
        ),
      auditClient: () => client(AuditService, "audit"),
      callbackClient: () => client(CallbackService, "callback"),
      agentToken: (agentId, extra = {}) =>
        mintJwt(jwtSecret, {
          sub: agentId,
          roles: extra.roles ?? ["agent"],
          ...(extra.onBehalfOf ? { onBehalfOf: extra.onBehalfOf } : {}),
        }),
      async grantAll(agentId) {
        await client(PermissionService, "permission").grant(
          { grant: allowAllSpec(agentId) },
          as(adminToken),
        );
      },
      as,
      async logText(...only) {
        const texts = await Promise.all(
          (only.length > 0 ? only : processes).map((name) =>
            readFile(path.join(dataDir, "logs", `${name}.log`), "utf8"),
          ),
        );
        return texts.join("");
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The permission violations of toolmesh's own processes (connections named toolmesh-<user>) in
 * the stack's nats-server log: each is a missing entry of the bus's permission table, which a
 * service would otherwise meet only as a timeout.
 */
async function refusedServices(dataDir: string): Promise<string[]> {
  const logs = path.join(dataDir, "logs");
  // nats-server.log, or a cluster's nats-server-<n>.log.
  const files = (await readdir(logs).catch(() => [] as string[])).filter((f) =>
    /^nats-server(-\d+)?\.log$/.test(f),
  );
  const texts = await Promise.all(
    files.map((f) => readFile(path.join(logs, f), "utf8").catch(() => "")),
  );
  return texts
    .join("\n")
    .split("\n")
    .filter((line) => line.includes("Violation") && line.includes(":toolmesh-"));
}
