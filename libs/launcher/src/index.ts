export { freePort } from "@toolmesh/config";
export { ensureBundles, SERVICE_ENV, SERVICE_NODE_FLAGS, serviceArgs } from "./bundles.js";
export {
  type BusCredential,
  busDir,
  ensureBusCredentials,
  ensureRoutePassword,
  seedFile,
} from "./bus-credentials.js";
export { Child } from "./child.js";
export { type DiskThresholds, defaultDiskThresholds, diskSpaceWarning } from "./disk-space.js";
export { LauncherMetrics, type MetricsListener, serveLauncherMetrics } from "./launcher-metrics.js";
export { LineWatcher } from "./lines.js";
export { natsServerBinary, natsServerVersion } from "./nats-binary.js";
export { NatsCluster, type NatsClusterOptions } from "./nats-cluster.js";
export {
  type NatsClusterConfig,
  type NatsConfig,
  type NatsServerUser,
  renderNatsConfig,
  writeNatsConfig,
} from "./nats-config.js";
export {
  DEFAULT_NATS_MEMORY_LIMIT,
  type NatsPlacement,
  NatsServer,
  type NatsServerOptions,
  natsMemoryLimit,
} from "./nats-server.js";
export { processCpuMs, processRssMb } from "./proc-stats.js";
export { type Replicas, replicaName, replicasOf } from "./replicas.js";
export {
  DEFAULT_RESTART_POLICY,
  type RestartPolicy,
  RestartWindow,
  restartDelayMs,
  restartPolicyConfig,
} from "./restart-policy.js";
export { ServiceProcess, type ServiceProcessOptions } from "./service-process.js";
export { availableServices, type ServiceSpec, serviceEntry, stackServices } from "./services.js";
export {
  type RunningStack,
  type StackOptions,
  startStack,
} from "./stack.js";
export { StackError } from "./stack-error.js";
export {
  type RunningEndpoint,
  readStackFile,
  readTokenFile,
  type StackFile,
  tokenFiles,
} from "./stack-file.js";
export type { ProcessState, StackFailure } from "./stack-supervision.js";
export {
  type CrashLoopEvent,
  describeExit,
  type ProcessEnd,
  type RestartingEvent,
  type SupervisionEvents,
  Supervisor,
} from "./supervisor.js";
