import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { isBusUser, natsPermissions, processUsers } from "@toolmesh/nats";
import { ensureBundles } from "./bundles.js";
import { busDir, ensureBusCredentials, seedFile } from "./bus-credentials.js";
import type { NatsServerUser } from "./nats-config.js";
import { NatsServer } from "./nats-server.js";
import { ServiceProcess } from "./service-process.js";
import { availableServices, type ServiceSpec } from "./services.js";
import { StackError } from "./stack-error.js";
import { readTokenFile, type StackFile, tokenFiles, writeStackFile } from "./stack-file.js";

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
  /** Where state lives: NATS store, tokens, memory files, logs, stack.json. */
  dataDir: string;
  /** Extra environment for every service (ports, secrets, log level). */
  env: NodeJS.ProcessEnv;
  /** Extra environment for one service, by name. */
  serviceEnv?: Record<string, NodeJS.ProcessEnv>;
  /** Only these services (in stack order); every one that exists when undefined. */
  services?: string[];
  /** Every service on a free port instead of its configured one. */
  freePorts?: boolean;
  /** Give up when a process is not healthy after this long. */
  startTimeoutMs: number;
  /** Called for progress lines meant for a person. */
  say: (line: string) => void;
}

export interface RunningEndpoint {
  name: string;
  /** http://host:port, or undefined for a process without a port. */
  url?: string;
  pid: number;
}

/** How a process of the stack ended when nobody asked it to. */
export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  lastLines: string;
}

export interface RunningStack {
  natsUrl: string;
  /** The local nats-server, when the stack started one. */
  nats?: NatsServer;
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
  /** What was written to <dataDir>/stack.json. */
  stackFile: StackFile;
  /** Resolves with the first process that exits without being asked to. */
  firstExit: Promise<UnexpectedExit>;
  stop(): Promise<void>;
}

/**
 * Starts NATS (unless given) and the services, and waits until all are healthy. Permission goes
 * first, because its bootstrap writes the tokens the others read; the rest start together.
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
  let reportExit: (exit: UnexpectedExit) => void = () => {};
  const firstExit = new Promise<UnexpectedExit>((resolve) => {
    reportExit = resolve;
  });
  let nats: NatsServer | undefined;
  const services = new Map<string, ServiceProcess>();
  const stopAll = async () => {
    nats?.unsupervise();
    for (const service of [...services.values()].reverse()) await service.stop();
    await nats?.stop();
  };

  try {
    let natsUrl = options.natsUrl;
    const busCredentials: Record<string, string> = {};
    if (!natsUrl) {
      const storeDir = path.join(dataDir, "nats");
      const credentials = ensureBusCredentials(dataDir, [...processUsers, "agent", "admin"]);
      for (const c of credentials) busCredentials[c.user] = c.seedFile;
      nats = new NatsServer({
        ...(options.natsBin ? { bin: options.natsBin } : {}),
        port: options.natsPort,
        storeDir,
        configFile: path.join(busDir(dataDir), "nats-server.conf"),
        syncInterval: options.natsSyncInterval ?? "always",
        ...(options.natsMaxFileStore ? { maxFileStore: options.natsMaxFileStore } : {}),
        users: credentials.map(
          (c): NatsServerUser => ({
            name: c.user,
            nkey: c.publicKey,
            // admin is the operators' key (nats CLI); every other user gets the table's permissions.
            ...(isBusUser(c.user) ? { permissions: natsPermissions(c.user) } : {}),
          }),
        ),
        cwd: root,
        logPath: path.join(logDir, "nats-server.log"),
        startTimeoutMs: options.startTimeoutMs,
        warn: (line) => say(`WARNING: ${line}`),
      });
      await nats.start();
      natsUrl = nats.url;
      superviseNats(nats, say, reportExit);
      say(
        `nats-server with JetStream at ${natsUrl} (store ${storeDir}, sync ${options.natsSyncInterval ?? "always"}, credentials in ${busDir(dataDir)})`,
      );
    } else {
      say(`using NATS at ${natsUrl}`);
    }

    const specs = selectServices(root, options.services);
    for (const spec of specs) {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...options.env,
        ...(options.freePorts && spec.portEnv ? { [spec.portEnv]: "0" } : {}),
        ...options.serviceEnv?.[spec.name],
        NATS_URL: natsUrl,
        TOOLMESH_DATA_DIR: dataDir,
        // Its own credential, and no other way to authenticate that could be inherited.
        ...(nats && isBusUser(spec.name)
          ? {
              TOOLMESH_NATS_NKEY_FILE: seedFile(dataDir, spec.name),
              TOOLMESH_NATS_CREDS: "",
              TOOLMESH_NATS_USER: "",
              TOOLMESH_NATS_PASSWORD: "",
            }
          : {}),
      };
      const service = new ServiceProcess(
        {
          name: spec.name,
          root,
          env,
          portEnv: spec.portEnv,
          logPath: path.join(logDir, `${spec.name}.log`),
          startTimeoutMs: options.startTimeoutMs,
        },
        (exit, lastLines) => reportExit({ name: spec.name, ...exit, lastLines }),
      );
      services.set(spec.name, service);
    }
    const [first, ...rest] = [...services.values()];
    if (first?.name === "permission") await first.start();
    await Promise.all((first?.name === "permission" ? rest : [first, ...rest]).map(startOne));

    const endpoints: RunningEndpoint[] = [...services.values()].map((s) => ({
      name: s.name,
      pid: s.pid,
      ...(s.url ? { url: s.url } : {}),
    }));
    for (const e of endpoints) {
      say(`${e.name.padEnd(14)} ${e.url ?? "(subscriber, no port)"}  pid ${e.pid}`);
    }
    const stackFile = writeStackFile(dataDir, natsUrl, endpoints, busCredentials);
    const adminToken = readTokenFile(tokenFiles(dataDir).admin);
    return {
      natsUrl,
      ...(nats ? { nats } : {}),
      busCredentials,
      endpoints,
      services,
      ...(adminToken ? { adminToken } : {}),
      adminTokenCreated: !hadAdminToken && adminToken !== undefined,
      stackFile,
      firstExit,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }

  async function startOne(service: ServiceProcess | undefined): Promise<void> {
    await service?.start();
  }
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

/**
 * Restarts a nats-server that dies on its own (services reconnect and ride through); only when it
 * cannot be brought back is it reported as the stack's unexpected exit. A stop() or kill()
 * through NatsServer is deliberate and restarts nothing.
 */
function superviseNats(
  nats: NatsServer,
  say: (line: string) => void,
  report: (exit: UnexpectedExit) => void,
): void {
  nats.supervise({
    restarting: (attempt, delayMs, died) =>
      say(
        `nats-server exited (${died.split("\n")[0]}); restarting it in ${delayMs} ms (attempt ${attempt})`,
      ),
    restarted: () => say(`nats-server is back at ${nats.url} with the same store`),
    gaveUp: (reason) =>
      report({ name: "nats-server", code: null, signal: null, lastLines: reason }),
  });
}
