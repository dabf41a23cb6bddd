import v8 from "node:v8";
import type { Interceptor } from "@connectrpc/connect";
import { type AuthConfig, type RequestAuthenticator, startServiceAuth } from "@toolmesh/auth";
import {
  type CommonConfig,
  loadConfig,
  loadOrExit,
  type Reader,
  streamMaxAgeMs,
} from "@toolmesh/config";
import { createLogger, type Logger } from "@toolmesh/log";
import {
  applyBucketLimits,
  connectNats,
  prepareStreams,
  type StreamKey,
  streamDefinitions,
} from "@toolmesh/nats";
import { type ListeningServer, onShutdown, type ToolmeshServer } from "@toolmesh/server";
import { collectProcessMetrics, watchConsumerLag } from "@toolmesh/telemetry";
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import { followBusHealth } from "./bus-health.js";

/** The settings runService reads itself. */
type ServiceConfig = CommonConfig & { port?: number };

/** What a service's start function gets: its settings and a connected bus. */
export interface ServiceContext<C> {
  config: C;
  log: Logger;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Every stream definition, with the replicas and retention the configuration sets. */
  streams: ReturnType<typeof streamDefinitions>;
  /**
   * Starts verifying bearer tokens (JWTs, and API keys from the permission bucket) and returns
   * what a server needs to authenticate every RPC; stopped at shutdown. Call it once the
   * service's own buckets exist.
   */
  authenticatedRpc(): Promise<RpcOptions>;
}

/** What every toolmesh server is built with. */
export interface RpcOptions {
  log: Logger;
  interceptors: Interceptor[];
  /** Largest request accepted (RESOURCE_EXHAUSTED beyond). */
  readMaxBytes: number;
  /** Authenticates a request's authorization header from a peer (ip:port), failures guarded. */
  authenticateRequest: RequestAuthenticator;
}

/** What a started service hands back: its server (if it has a port) and how to stop it. */
export interface RunningService {
  /** Served on config.port; a subscriber without RPCs has none and logs "ready" instead. */
  server?: ToolmeshServer;
  /** Fields of the "ready" line of a service without a server. */
  ready?: Record<string, unknown>;
  /** Runs once the server listens, with where (a second port opens after the main one …). */
  listening?(server: ListeningServer): Promise<void>;
  /** Runs alongside the server's drain, when shutdown begins (a second port closes too …). */
  draining?(): Promise<void>;
  /** Stops what start() started, after the server stopped taking calls; NATS drains after. */
  stop(): Promise<void> | void;
}

/** A toolmesh process: its name, its settings, the streams it uses and how it starts. */
export interface ServiceSpec<C extends ServiceConfig> {
  /**
   * The process name: the logger's `service`, its bus user (libs/nats bus-access.ts, which says
   * what it may publish and read) and the NATS connection name `toolmesh-<name>`.
   */
  name: string;
  config: { [K in keyof C]: Reader<C[K]> };
  /**
   * Streams it publishes to or consumes: those it writes are created or updated before start(),
   * those it only reads are waited for.
   */
  streams?: StreamKey[];
  start(context: ServiceContext<C>): Promise<RunningService>;
}

/**
 * Runs a service the way every toolmesh process runs: reads its configuration (a bad value exits
 * with code 2 naming the variable), connects to NATS, ensures its streams with the configured
 * retention, starts it, listens, and on SIGTERM or SIGINT stops taking calls, stops it and
 * drains NATS.
 */
export async function runService<C extends ServiceConfig>(spec: ServiceSpec<C>): Promise<void> {
  const config = loadOrExit(() => loadConfig<C>(spec.config));
  // Before the first request allocates: the heap's growth is V8's flag, settable at run time.
  if (config.heapGrowingPercent > 0)
    v8.setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`);
  // Read at every scavenge, so it too can be set at run time.
  if (!config.parallelScavenge) v8.setFlagsFromString("--no-parallel-scavenge");
  const log = createLogger(spec.name, config.logLevel);
  const nc = await connectNats({
    url: config.natsUrl,
    user: spec.name,
    credentials: config.natsCredentials,
    log,
    pingIntervalMs: config.natsPingIntervalMs,
  });
  const jsm = await nc.jetstreamManager();
  const streams = streamDefinitions({
    replicas: config.jetstreamReplicas,
    maxAgeMs: streamMaxAgeMs(config),
    maxBytes: config.streamMaxBytes,
  });
  await prepareStreams({
    jsm,
    user: spec.name,
    streams: spec.streams ?? [],
    definitions: streams,
    log,
  });
  // GET /metrics on the service's port: process figures and the lag of its streams' consumers.
  collectProcessMetrics();
  watchConsumerLag(
    jsm,
    (spec.streams ?? []).flatMap((name) => streams[name].name ?? []),
  );
  const stops: (() => void)[] = [];
  const authenticatedRpc = async (): Promise<RpcOptions> => {
    if (!hasAuthSettings(config))
      throw new Error(`${spec.name}: authenticatedRpc needs authConfig in its configuration`);
    const auth = await startServiceAuth({ config, nc, log });
    stops.push(() => auth.stop());
    return {
      log,
      interceptors: [auth.interceptor],
      readMaxBytes: config.maxMessageBytes,
      authenticateRequest: auth.authenticateRequest,
    };
  };
  const running = await spec.start({
    config,
    log,
    nc,
    js: nc.jetstream(),
    jsm,
    streams,
    authenticatedRpc,
  });
  await applyBucketLimits({ jsm, user: spec.name, maxBytes: config.bucketMaxBytes, log });
  let listening: ListeningServer | undefined;
  let draining = false;
  if (running.server) {
    listening = await running.server.listen(config.port ?? 0, config.host);
    followBusHealth(nc, running.server.health, log, () => draining);
    await running.listening?.(listening);
  } else {
    // No RPC port: the launcher and tests wait for this line.
    log.info(running.ready ?? {}, "ready");
  }
  onShutdown(log, async () => {
    draining = true;
    await Promise.all([listening?.close(), running.draining?.()]);
    await running.stop();
    for (const stop of stops) stop();
    await nc.drain();
  });
}

/** True when the configuration spreads authConfig (every service with RPCs does). */
function hasAuthSettings(config: ServiceConfig): config is ServiceConfig & AuthConfig {
  return typeof (config as Partial<AuthConfig>).jwtIssuer === "string";
}
