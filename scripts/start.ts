// npm start: the whole toolmesh stack on this machine, stopped with Ctrl-C.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  bytes,
  int,
  loadConfig,
  loadOrExit,
  optionalStr,
  str,
  syncInterval,
} from "@toolmesh/config";
import {
  DEFAULT_RESTART_POLICY,
  diskSpaceWarning,
  natsMemoryLimit,
  restartPolicyConfig,
  StackError,
  startStack,
} from "@toolmesh/launcher";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const config = loadOrExit(() =>
  loadConfig({
    natsUrl: optionalStr("NATS_URL"),
    natsPort: int("TOOLMESH_NATS_PORT", 4222, { min: -1, max: 65535 }),
    natsSyncInterval: syncInterval("TOOLMESH_NATS_SYNC_INTERVAL", "always"),
    natsMaxFileStore: bytes("TOOLMESH_NATS_MAX_FILE_STORE", 1024 ** 4, { min: 1024 ** 3 }),
    natsMemoryLimit: natsMemoryLimit(),
    // 3: a three-node JetStream cluster on loopback and two replicas of every service.
    clusterNodes: int("TOOLMESH_CLUSTER", 1, { min: 1, max: 5 }),
    // 0: two of each service with a cluster, else one.
    serviceReplicas: int("TOOLMESH_SERVICE_REPLICAS", 0, { min: 0, max: 5 }),
    dataDir: str("TOOLMESH_DATA_DIR", path.join(root, ".toolmesh")),
    startTimeoutMs: int("TOOLMESH_START_TIMEOUT_MS", 60_000, { min: 1000, max: 600_000 }),
    // A process that exits more often than this within the window stops the stack.
    ...restartPolicyConfig,
    // The launcher's own /metrics (restarts of each process); -1: none, 0: a free port.
    metricsPort: int("TOOLMESH_LAUNCHER_METRICS_PORT", 7107, { min: -1, max: 65535 }),
    host: str("TOOLMESH_HOST", "127.0.0.1"),
  }),
);
const say = (line: string) => process.stdout.write(`toolmesh: ${line}\n`);

// A full disk stops every call (fail closed); say so at start and every minute while running.
const warnDisk = () => {
  const warning = diskSpaceWarning(path.resolve(config.dataDir));
  if (warning) process.stderr.write(`toolmesh: warning: ${warning}\n`);
};
mkdirSync(path.resolve(config.dataDir), { recursive: true });
warnDisk();
setInterval(warnDisk, 60_000).unref();

let stack: Awaited<ReturnType<typeof startStack>> | undefined;
let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  // A signal during start-up waits for it, so no process it started is left behind.
  if (!stack) return;
  say("stopping");
  await stack.stop();
  say("stopped");
  process.exit(code);
};
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
try {
  const { serviceReplicas, restartLimit, restartWindowMs, metricsPort, host, ...settings } = config;
  stack = await startStack({
    root,
    ...settings,
    ...(serviceReplicas > 0 ? { replicas: serviceReplicas } : {}),
    restartPolicy: {
      ...DEFAULT_RESTART_POLICY,
      maxRestarts: restartLimit,
      windowMs: restartWindowMs,
    },
    ...(metricsPort >= 0 ? { metrics: { host, port: metricsPort } } : {}),
    dataDir: path.resolve(config.dataDir),
    env: {},
    say,
  });
} catch (error) {
  process.stderr.write(
    `toolmesh: ${error instanceof StackError ? error.message : String(error)}\n`,
  );
  process.exit(1);
}

if (stopping) {
  stopping = false;
  await stop(0);
}
say("all services are SERVING");
const adminTokenFile = stack.stackFile.tokenFiles.admin;
if (stack.adminToken && stack.adminTokenCreated) {
  say(`admin token, created on this first start (kept in ${adminTokenFile}, mode 0600):`);
  process.stdout.write(`${stack.adminToken}\n`);
} else if (stack.adminToken) {
  say(`the admin token is in ${adminTokenFile}`);
}
say(`addresses in ${path.join(config.dataDir, "stack.json")}`);
if (stack.busCredentials.agent) {
  say(
    `agents subscribe to callback events with the read-only NATS key ${stack.busCredentials.agent}`,
  );
}
say(`logs in ${path.join(config.dataDir, "logs")}; press Ctrl-C to stop`);

// Every process that exits on its own is restarted; only one that keeps crashing stops the stack.
const failure = await stack.failed;
if (!stopping) {
  process.stderr.write(
    `toolmesh: ${failure.message}; stopping the stack. Its last lines (all in ${path.join(config.dataDir, "logs", `${failure.name}.log`)}):\n${failure.lastLines}\n`,
  );
  await stop(1);
}
