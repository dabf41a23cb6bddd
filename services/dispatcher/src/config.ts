import { authConfig } from "@toolmesh/auth";
import {
  type ConfigOf,
  callSweepConfig,
  commonConfig,
  int,
  list,
  optionalStr,
  port,
  serviceUrl,
  str,
  url,
} from "@toolmesh/config";
import { vaultSharedConfig } from "@toolmesh/vault";

/** Every setting of the Dispatcher, read from the environment. */
export const dispatcherConfig = {
  ...commonConfig,
  ...authConfig,
  ...callSweepConfig,
  port: port("TOOLMESH_DISPATCHER_PORT", 7100),
  /** A second port serving DispatcherService over @grpc/grpc-js only (the fast path); -1 disables. */
  grpcPort: int("TOOLMESH_DISPATCHER_GRPC_PORT", -1, { min: -1, max: 65535 }),
  defaultTimeoutMs: int("TOOLMESH_DEFAULT_TIMEOUT_MS", 30_000, { min: 1, max: 3_600_000 }),
  maxTimeoutMs: int("TOOLMESH_MAX_TIMEOUT_MS", 600_000, { min: 1, max: 3_600_000 }),
  idempotencyWindowMs: int("TOOLMESH_IDEMPOTENCY_WINDOW_MS", 24 * 60 * 60 * 1000, {
    min: 1000,
    max: 30 * 24 * 60 * 60 * 1000,
  }),
  /** How long call ids stay owned by their first agent: as long as Callback keeps outcomes. */
  callTtlDays: int("TOOLMESH_CALLBACK_TTL_DAYS", 7, { min: 0, max: 3650 }),
  /** Key patterns hidden in audit records and trace events on top of the defaults (docs/security.md). */
  redactKeys: list("TOOLMESH_REDACT_KEYS", []),
  maxBackendResponseBytes: int("TOOLMESH_MAX_BACKEND_RESPONSE_BYTES", 4 * 1024 * 1024, {
    min: 1024,
    max: 64 * 1024 * 1024,
  }),
  localIdleTimeoutMs: int("TOOLMESH_LOCAL_IDLE_TIMEOUT_MS", 5 * 60 * 1000, { min: 100 }),
  localMaxConcurrency: int("TOOLMESH_LOCAL_MAX_CONCURRENCY", 8, { min: 1, max: 10_000 }),
  localStartTimeoutMs: int("TOOLMESH_LOCAL_START_TIMEOUT_MS", 15_000, { min: 100 }),
  /** How often each running instance of a local or docker tool is health-checked. */
  healthIntervalMs: int("TOOLMESH_HEALTH_INTERVAL_MS", 10_000, { min: 100, max: 3_600_000 }),
  /** Failures (or timeouts) in a row of one tool that open its circuit breaker; 0: never. */
  breakerFailures: int("TOOLMESH_BREAKER_FAILURES", 5, { min: 0, max: 10_000 }),
  /** How long an open breaker fails calls fast before it lets a probe call through. */
  breakerOpenMs: int("TOOLMESH_BREAKER_OPEN_MS", 30_000, { min: 100, max: 3_600_000 }),
  /** Output bytes the result cache holds at most across every tool (least recently used go). */
  cacheMaxBytes: int("TOOLMESH_CACHE_MAX_BYTES", 64 * 1024 * 1024, { min: 0, max: 2 ** 40 }),
  /** Results kept at most per tool whose spec sets no cache_max_entries. */
  cacheMaxEntries: int("TOOLMESH_CACHE_MAX_ENTRIES", 1000, { min: 1, max: 1_000_000 }),
  /** This process's name in start records and heartbeats; a fresh one each start when unset. */
  instanceId: optionalStr("TOOLMESH_INSTANCE_ID"),
  /**
   * How long a read-only call's start record waits for its end, to be written with it as one
   * record (one write, one fsync); a call still running then has its start written alone. 0
   * writes every start at once.
   */
  startLingerMs: int("TOOLMESH_START_LINGER_MS", 50, { min: 0, max: 1000 }),
  /**
   * Record batches sent and not yet acked at once: records written meanwhile wait and share the
   * next batch (and its fsync). 1 makes every call wait for the batch before it; more lets a
   * quiet machine's calls go out at once.
   */
  recordBatchesInFlight: int("TOOLMESH_RECORD_BATCHES_IN_FLIGHT", 2, { min: 1, max: 64 }),
  /**
   * How long a record batch whose ack was lost (a nats-server restart) is sent again before its
   * calls are answered UNAVAILABLE with their outcome unknown; shorter than the lease grace.
   */
  recordRetryMs: int("TOOLMESH_RECORD_RETRY_MS", 30_000, { min: 1000, max: 600_000 }),
  /**
   * Room a discard-new record stream must keep for the records of calls already running; below
   * it new calls are refused. 0: four times the bus's max_payload.
   */
  recordStoreMarginBytes: int("TOOLMESH_RECORD_STORE_MARGIN_BYTES", 0, {
    min: 0,
    max: 1024 * 1024 * 1024,
  }),
  /**
   * How many Dispatchers share the load: each enforces 1/n of every rate limit and daily quota
   * with its own counters (docs/security.md), so a call costs no NATS write.
   */
  dispatcherReplicas: int("TOOLMESH_DISPATCHER_REPLICAS", 1, { min: 1, max: 1000 }),
  /**
   * The tool agent, to which AgentService calls and `POST /chat` on this port are forwarded with
   * the caller's own token: TOOLMESH_TOOL_AGENT_URL, else TOOLMESH_HOST and TOOLMESH_TOOL_AGENT_PORT.
   */
  toolAgentUrl: serviceUrl("tool-agent"),
  /** The Registry, which ImportMcpServer writes imported tools to (with the admin's credential). */
  registryUrl: url("TOOLMESH_REGISTRY_URL", "http://127.0.0.1:7101", ["http:", "https:"]),
  /**
   * Permission, which ImportMcpServer asks (with the admin's credential) to register the OAuth
   * provider of a server protected by OAuth: TOOLMESH_PERMISSION_URL, else TOOLMESH_HOST and
   * TOOLMESH_PERMISSION_PORT.
   */
  permissionUrl: serviceUrl("permission"),
  /** Close an idle MCP server connection (stop a stdio server) after this long. */
  mcpIdleTimeoutMs: int("TOOLMESH_MCP_IDLE_TIMEOUT_MS", 5 * 60 * 1000, { min: 100 }),
  /** Hostnames a browser Origin may name on /mcp, beyond localhost; others get 403. */
  mcpAllowedOrigins: list("TOOLMESH_MCP_ALLOWED_ORIGINS", []),
  /** Authorization servers /.well-known/oauth-protected-resource announces (RFC 9728). */
  mcpAuthorizationServers: list("TOOLMESH_MCP_AUTHORIZATION_SERVERS", []),
  /** The Docker Engine API socket that docker tools run through. */
  dockerSocket: str("TOOLMESH_DOCKER_SOCKET", "/var/run/docker.sock"),
  dockerIdleTimeoutMs: int("TOOLMESH_DOCKER_IDLE_TIMEOUT_MS", 5 * 60 * 1000, { min: 100 }),
  dockerMaxConcurrency: int("TOOLMESH_DOCKER_MAX_CONCURRENCY", 8, { min: 1, max: 10_000 }),
  dockerStartTimeoutMs: int("TOOLMESH_DOCKER_START_TIMEOUT_MS", 30_000, { min: 100 }),
  /** Limits of a docker tool whose spec sets none. */
  dockerMemoryBytes: int("TOOLMESH_DOCKER_MEMORY_BYTES", 256 * 1024 * 1024, {
    min: 6 * 1024 * 1024,
    max: 64 * 1024 * 1024 * 1024,
  }),
  dockerCpuMillis: int("TOOLMESH_DOCKER_CPU_MILLIS", 1000, { min: 1, max: 64_000 }),
  dockerPids: int("TOOLMESH_DOCKER_PIDS", 128, { min: 1, max: 32_768 }),
  /** One file per secret that docker tools may declare; empty means none can be declared. */
  toolSecretsDir: str("TOOLMESH_TOOL_SECRETS_DIR", ""),
  /** How long a call held for approval waits before it ends REFUSED `approval_expired`. */
  approvalTimeoutMs: int("TOOLMESH_APPROVAL_TIMEOUT_MS", 60 * 60 * 1000, {
    min: 1000,
    max: 7 * 24 * 60 * 60 * 1000,
  }),
  /** Roles whose holders may decide every held call (admins always may). */
  approverRoles: list("TOOLMESH_APPROVER_ROLES", ["approver"]),
  ...vaultSharedConfig,
};

export type DispatcherConfig = ConfigOf<typeof dispatcherConfig>;
