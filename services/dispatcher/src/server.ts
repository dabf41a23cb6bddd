import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { RequestAuthenticator } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { MemorySnapshot } from "@toolmesh/nats";
import {
  AgentService,
  DispatcherService,
  OAuthConnectionSchema,
  OAuthProviderSchema,
  PermissionService,
  RegistryService,
  SecretSchema,
  type ToolSpec,
} from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import type { Tracing } from "@toolmesh/telemetry";
import { ApprovalDesk } from "./approvals/approval-desk.js";
import type { BudgetLedger } from "./catalog/budget-ledger.js";
import type { PermissionGate } from "./catalog/permission-gate.js";
import type { CallLimiter } from "./catalog/rate-limits.js";
import { ToolCatalog, type ToolSource } from "./catalog/tool-catalog.js";
import { ToolSearch } from "./catalog/tool-search.js";
import { DispatchChain } from "./chain/dispatch-chain.js";
import { ResultCache } from "./chain/result-cache.js";
import { RunningCalls } from "./chain/running-calls.js";
import { circuitOpenedRecorder, ToolBreakers } from "./chain/tool-breakers.js";
import { CallRecorder, type RecordSink } from "./records/call-recorder.js";
import { type HeldCallStore, MemoryHeldCalls } from "./records/held-calls.js";
import type { CallIdOwners, IdempotencyStore } from "./records/idempotency.js";
import { NoOutcomes, type OutcomeLookup, type OutcomeReader } from "./records/outcome-lookup.js";
import { MemoryTaskIndex, type TaskIndex } from "./records/task-index.js";
import { CallSecrets, type VaultLink, type VaultView } from "./runtimes/call-secrets.js";
import type { BreakerOpening } from "./runtimes/circuit-breaker.js";
import { DockerRuntime } from "./runtimes/docker-runtime.js";
import { GrpcRuntime } from "./runtimes/grpc-runtime.js";
import { LocalRuntime } from "./runtimes/local-runtime.js";
import { McpRuntime } from "./runtimes/mcp-runtime.js";
import { RemoteRuntime } from "./runtimes/remote-runtime.js";
import { withSecrets } from "./runtimes/secret-injection.js";
import { keepToolsWarm } from "./runtimes/warm-keeper.js";
import { forwardAgentService, type ToolAgentLink } from "./transports/agent/agent-forward.js";
import { authTimingInterceptor } from "./transports/auth-timing.js";
import { fastCallRoutes } from "./transports/call-rpcs.js";
import { createDispatcherHandlers } from "./transports/grpc-handlers.js";
import { type GrpcPort, listenGrpcPort } from "./transports/grpc-port.js";
import { createHttpRoutes } from "./transports/http-routes.js";
import { Confirmations } from "./transports/inputs/confirmations.js";
import { InputDesk } from "./transports/inputs/input-desk.js";
import { RequestStates } from "./transports/inputs/request-state.js";
import { LazyMcpEndpoint } from "./transports/mcp/lazy-endpoint.js";
import { type PostedResponse, PushedRequests } from "./transports/mcp/mcp-push.js";
import type { NatsReplicaLink } from "./transports/replica-link.js";
import { TaskDesk } from "./transports/tasks/task-desk.js";

/** Settings the Dispatcher's parts read; a subset of DispatcherConfig. */
export interface DispatcherSettings {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  redactKeys: string[];
  maxBackendResponseBytes: number;
  maxMessageBytes: number;
  localIdleTimeoutMs: number;
  localMaxConcurrency: number;
  localStartTimeoutMs: number;
  registryUrl: string;
  permissionUrl: string;
  toolAgentUrl: string;
  mcpIdleTimeoutMs: number;
  mcpAllowedOrigins: string[];
  mcpAuthorizationServers: string[];
  dockerSocket: string;
  dockerIdleTimeoutMs: number;
  dockerMaxConcurrency: number;
  dockerStartTimeoutMs: number;
  dockerMemoryBytes: number;
  dockerCpuMillis: number;
  dockerPids: number;
  toolSecretsDir: string;
  approvalTimeoutMs: number;
  approverRoles: string[];
  /** A tool's circuit breaker defaults (TOOLMESH_BREAKER_*): 5 failures in a row, open 30 s. */
  breakerFailures?: number;
  /** How often each running local or docker tool instance is health-checked (default 10 s). */
  healthIntervalMs?: number;
  breakerOpenMs?: number;
  /** The result cache's bounds (TOOLMESH_CACHE_*): 64 MiB in all, 1000 results a tool. */
  cacheMaxBytes?: number;
  cacheMaxEntries?: number;
  /** An access token is asked for again once it expires within this long. */
  oauthRefreshMarginMs: number;
  /**
   * How long a read-only call's start record waits for its end, to be written with it as one
   * record (TOOLMESH_START_LINGER_MS); 0 (the default here, for in-process tests) writes it at once.
   */
  startLingerMs?: number;
}

export interface DispatcherDeps {
  /** The registry's tools: a KvSnapshot of toolmesh-registry (or a map in tests). */
  tools: ToolSource;
  /** The grants: a PolicySnapshot of toolmesh-permission. */
  policy: PermissionGate;
  /** The rate limits Permission keeps, followed from its bucket (a CallLimiter). */
  limits?: CallLimiter;
  /** The budgets Permission keeps and Callback's spend against them; none enforced when omitted. */
  budgets?: BudgetLedger;
  /** Where the calls' records go (JetStreamRecords: batches on the record stream). */
  records: RecordSink;
  /** This process's instance id, named in each call's start record for the sweeper. */
  instance: string;
  idempotency: IdempotencyStore;
  /** Calls held for approval (a KvHeldCalls); in memory when omitted (in-process tests). */
  heldCalls?: HeldCallStore;
  /** Calls' outcomes: whether one is recorded, and what it is (a StreamOutcomeLookup); none when omitted. */
  outcomes?: OutcomeLookup & OutcomeReader;
  /** Who owns each call id (a KvCallIdOwners). */
  callIds: CallIdOwners;
  /** Verifies every RPC's bearer token (the interceptors) and the grpc-js port's. */
  auth: { interceptors: Interceptor[]; authenticateRequest: RequestAuthenticator };
  settings: DispatcherSettings;
  log: Logger;
  /** Spans of each call (startTracing from the OTEL_* variables); off when omitted. */
  tracing?: Tracing;
  /** Which calls are whose MCP tasks (a KvTaskIndex); in memory when omitted. */
  taskIndex?: TaskIndex;
  /** The other Dispatcher replicas, over the bus; none when omitted (one in-process replica). */
  link?: NatsReplicaLink;
  /**
   * The vault's index, followed from the permission bucket, and Permission asked for values; when
   * omitted (in-process tests) a tool that names a secret is refused.
   */
  vault?: { view: VaultView; link: VaultLink };
}

/** No vault: an empty index (loaded), and no values to give. */
const noVault: { view: VaultView; link: VaultLink } = {
  view: {
    secrets: new MemorySnapshot(SecretSchema),
    providers: new MemorySnapshot(OAuthProviderSchema),
    connections: new MemorySnapshot(OAuthConnectionSchema),
  },
  link: {
    resolve: () =>
      Promise.reject(new ConnectError("this Dispatcher has no vault", Code.Unavailable)),
    link: () => Promise.reject(new ConnectError("this Dispatcher has no vault", Code.Unavailable)),
  },
};

export interface Dispatcher {
  readonly server: ToolmeshServer;
  readonly chain: DispatchChain;
  /** Lists, decides and sweeps the calls held for approval. */
  readonly approvals: ApprovalDesk;
  readonly running: RunningCalls;
  readonly local: LocalRuntime;
  readonly docker: DockerRuntime;
  /** Serves Dispatch, DispatchBatch and Cancel on a second port with @grpc/grpc-js. */
  listenGrpc(port: number, host: string): Promise<GrpcPort>;
  /** Interrupts running calls, stops local and docker tools and closes backend channels. */
  close(): Promise<void>;
}

/** Builds the Dispatcher from its dependencies; a test can listen on port 0 in-process. */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { settings, log } = deps;
  const catalog = new ToolCatalog(deps.tools);
  const running = new RunningCalls();
  const grpcRuntime = new GrpcRuntime(settings.maxBackendResponseBytes);
  const remote = new RemoteRuntime(settings.maxBackendResponseBytes);
  const recorder = new CallRecorder(
    deps.records,
    settings.redactKeys,
    deps.instance,
    settings.startLingerMs ?? 0,
  );
  const recordOpening = circuitOpenedRecorder(recorder, log);
  const breakers = new ToolBreakers(
    { failures: settings.breakerFailures ?? 5, openMs: settings.breakerOpenMs ?? 30_000 },
    (opened) => {
      recordOpening(opened);
      // A local or docker tool that keeps failing is restarted: stopped now, its probe starts it.
      const tool = catalog.get(opened.tool);
      const runtime = tool && [local, docker].find((r) => r.runs(tool));
      if (runtime)
        void runtime
          .stop(opened.tool)
          .catch((error: unknown) =>
            log.warn({ err: error, tool: opened.tool }, "could not restart a failing tool"),
          );
    },
  );
  // An instance of a pool whose calls keep failing is recorded as its tool's breaker is, and replaced.
  const instanceBreakers = {
    settingsOf: (spec: ToolSpec) => breakers.settingsOf(spec),
    opened: (tool: string, instance: number, opening: BreakerOpening) =>
      recordOpening({ tool, toolInstance: String(instance), opening }),
  };
  const healthIntervalMs = settings.healthIntervalMs ?? 10_000;
  const local = new LocalRuntime(
    grpcRuntime,
    remote,
    {
      idleTimeoutMs: settings.localIdleTimeoutMs,
      maxConcurrency: settings.localMaxConcurrency,
      startTimeoutMs: settings.localStartTimeoutMs,
      healthIntervalMs,
    },
    log,
    instanceBreakers,
  );
  const mcpRuntime = new McpRuntime({ idleTimeoutMs: settings.mcpIdleTimeoutMs }, log);
  const docker = new DockerRuntime(
    grpcRuntime,
    remote,
    {
      idleTimeoutMs: settings.dockerIdleTimeoutMs,
      maxConcurrency: settings.dockerMaxConcurrency,
      startTimeoutMs: settings.dockerStartTimeoutMs,
      healthIntervalMs,
    },
    {
      socket: settings.dockerSocket,
      memoryBytes: settings.dockerMemoryBytes,
      cpuMillis: settings.dockerCpuMillis,
      pids: settings.dockerPids,
      secretsDir: settings.toolSecretsDir,
      startTimeoutMs: settings.dockerStartTimeoutMs,
    },
    log,
    instanceBreakers,
  );
  const stopWarming = keepToolsWarm(deps.tools, catalog, [local, docker]);
  const secrets = new CallSecrets(
    deps.vault?.view ?? noVault.view,
    deps.vault?.link ?? noVault.link,
    settings.oauthRefreshMarginMs,
  );
  const heldCalls = deps.heldCalls ?? new MemoryHeldCalls();
  const outcomes = deps.outcomes ?? new NoOutcomes();
  const chain = new DispatchChain({
    catalog,
    policy: deps.policy,
    recorder,
    approvals: {
      store: heldCalls,
      settings: { holdMs: settings.approvalTimeoutMs, approverRoles: settings.approverRoles },
    },
    // Every runtime gets the secrets its tools name; a tool without secrets passes straight through.
    runtimes: {
      grpc: withSecrets(grpcRuntime, secrets),
      local: withSecrets(local, secrets),
      remote: withSecrets(remote, secrets),
      docker: withSecrets(docker, secrets),
      mcp: withSecrets(mcpRuntime, secrets),
    },
    secrets,
    idempotency: deps.idempotency,
    callIds: deps.callIds,
    running,
    limits: deps.limits,
    budgets: deps.budgets,
    breakers,
    cache: new ResultCache({
      maxBytes: settings.cacheMaxBytes ?? 64 * 1024 * 1024,
      maxEntries: settings.cacheMaxEntries ?? 1000,
    }),
    settings: { defaultTimeoutMs: settings.defaultTimeoutMs, maxTimeoutMs: settings.maxTimeoutMs },
    log,
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });
  const registry = createClient(
    RegistryService,
    createGrpcTransport({ baseUrl: settings.registryUrl }),
  );
  const checks = {
    catalog,
    policy: deps.policy,
    running,
    secrets,
    budgets: deps.budgets,
    breakers,
  };
  const search = new ToolSearch(catalog);
  const inputs = new InputDesk(deps.instance, new RequestStates(), deps.link);
  const pushed = new PushedRequests(deps.instance);
  const toolAgent: ToolAgentLink = {
    url: settings.toolAgentUrl,
    client: createClient(AgentService, createGrpcTransport({ baseUrl: settings.toolAgentUrl })),
  };
  const approvals = new ApprovalDesk({
    store: heldCalls,
    chain,
    checks,
    recorder,
    outcomes,
    approverRoles: settings.approverRoles,
    log,
  });
  const confirmations = new Confirmations(heldCalls, approvals);
  const tasks = new TaskDesk({
    inputs,
    running,
    held: heldCalls,
    outcomes,
    index: deps.taskIndex ?? new MemoryTaskIndex(),
    confirmations,
    approvals,
    instance: deps.instance,
    link: deps.link,
  });
  const stopLink = deps.link?.serve({
    answer: (state, responses, principal) => inputs.answer(state, responses, principal),
    update: async (callId, responses, principal) => inputs.answerCall(callId, responses, principal),
    cancel: async (callId, principal) => tasks.cancelHere(callId, principal),
    waiting: async (callId, principal) => inputs.waiting(callId, principal),
    deliver: async (response, principal) =>
      pushed.deliver(response as unknown as PostedResponse, principal),
  });
  const mcp = new LazyMcpEndpoint(
    {
      ...checks,
      search,
      chain,
      inputs,
      pushed,
      confirmations,
      link: deps.link,
      version: "0.1.0",
      tasks: { tasks, inputs, pushed, resultWaitMs: settings.maxTimeoutMs },
    },
    {
      authenticate: deps.auth.authenticateRequest,
      allowedOrigins: settings.mcpAllowedOrigins,
      authorizationServers: settings.mcpAuthorizationServers,
      maxBodyBytes: settings.maxMessageBytes,
      log,
    },
  );
  const stopFollowing = mcp.followRegistry(deps.tools);
  const stopNotices = mcpRuntime.onNotice((notice) => mcp.serverNotice(notice));
  let serving = true;
  const server = createToolmeshServer({
    services: [DispatcherService],
    log,
    readMaxBytes: settings.maxMessageBytes,
    interceptors: [authTimingInterceptor, ...deps.auth.interceptors],
    // Binary gRPC calls of the call RPCs skip connect-node: on the default port they cost what
    // they cost on the grpc-js port (docs/benchmark.md).
    fastUnary: fastCallRoutes({
      chain,
      catalog,
      running,
      inputs,
      authenticateRequest: deps.auth.authenticateRequest,
    }),
    fallback: createHttpRoutes({
      facade: { ...checks, chain, local, registry, maxBodyBytes: settings.maxMessageBytes, log },
      toolAgent,
      mcp,
      authenticate: deps.auth.authenticateRequest,
      serving: () => serving && catalog.isReady && deps.policy.isReady,
      log,
    }),
    routes(router) {
      // One address for agents: the tool agent's RPCs too, forwarded with the caller's token.
      router.service(AgentService, forwardAgentService(toolAgent));
      router.service(
        DispatcherService,
        createDispatcherHandlers({
          chain,
          catalog,
          running,
          inputs,
          local,
          docker,
          checks,
          search: { ...checks, search },
          approvals,
          imports: {
            mcp: mcpRuntime,
            catalog,
            registry,
            oauth: {
              permission: createClient(
                PermissionService,
                createGrpcTransport({ baseUrl: settings.permissionUrl }),
              ),
              secrets,
            },
          },
        }),
      );
    },
  });
  return {
    server,
    chain,
    approvals,
    running,
    local,
    docker,
    listenGrpc: (port, host) =>
      listenGrpcPort(
        {
          chain,
          catalog,
          running,
          inputs,
          authenticateRequest: deps.auth.authenticateRequest,
          log,
          readMaxBytes: settings.maxMessageBytes,
        },
        port,
        host,
      ),
    async close() {
      serving = false;
      stopWarming();
      stopFollowing();
      stopNotices();
      stopLink?.();
      pushed.abandon();
      running.interruptAll("shutdown");
      await Promise.all([local.close(), docker.close(), mcp.close(), mcpRuntime.close()]);
      await grpcRuntime.close();
    },
  };
}
