import { authConfig } from "@toolmesh/auth";
import {
  bool,
  type ConfigOf,
  commonConfig,
  int,
  oneOf,
  optionalStr,
  optionalUrl,
  port,
  serviceUrl,
  str,
} from "@toolmesh/config";

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** Every setting of the tool agent, read from the environment (docs/configuration.md). */
export const toolAgentConfig = {
  ...commonConfig,
  ...authConfig,
  port: port("TOOLMESH_TOOL_AGENT_PORT", 7106),
  /**
   * The Registry (the caller's view of tools, groups, runtimes; the tool agent's registrations):
   * TOOLMESH_REGISTRY_URL, else TOOLMESH_HOST and TOOLMESH_REGISTRY_PORT.
   */
  registryUrl: serviceUrl("registry"),
  /** The Dispatcher, through which the CodingAgent calls its tools (TOOLMESH_DISPATCHER_URL …). */
  dispatcherUrl: serviceUrl("dispatcher"),
  /** The tool agent's own key and the CodingAgent's; by default the files Permission writes. */
  toolAgentToken: optionalStr("TOOLMESH_TOOL_AGENT_TOKEN"),
  codingAgentToken: optionalStr("TOOLMESH_CODING_AGENT_TOKEN"),

  /** An OpenAI-compatible Chat Completions base URL (`http://127.0.0.1:11434/v1`); unset: no chat. */
  modelUrl: optionalUrl("TOOLMESH_MODEL_URL", ["http:", "https:"]),
  model: str("TOOLMESH_MODEL", "default"),
  /** A file holding the model's API key (sent as a bearer token; never logged). */
  modelApiKeyFile: optionalStr("TOOLMESH_MODEL_API_KEY_FILE"),
  /** The CodingAgent's own model; the ServiceAgent's when unset. */
  codingModelUrl: optionalUrl("TOOLMESH_CODING_MODEL_URL", ["http:", "https:"]),
  codingModel: optionalStr("TOOLMESH_CODING_MODEL"),
  codingModelApiKeyFile: optionalStr("TOOLMESH_CODING_MODEL_API_KEY_FILE"),
  /** How long one model request may take. */
  modelTimeoutMs: int("TOOLMESH_MODEL_TIMEOUT_MS", 60 * SECOND, { min: 100, max: 30 * MINUTE }),
  /** The largest model reply read; a larger one is an error. */
  modelMaxResponseBytes: int("TOOLMESH_MODEL_MAX_RESPONSE_BYTES", 1024 * 1024, {
    min: 1024,
    max: 64 * 1024 * 1024,
  }),
  /** max_tokens asked of the model per reply; 0 leaves it to the model. */
  modelMaxTokens: int("TOOLMESH_MODEL_MAX_TOKENS", 0, { min: 0, max: 1_000_000 }),

  /** The longest message a chat accepts. */
  chatMaxMessageChars: int("TOOLMESH_CHAT_MAX_MESSAGE_CHARS", 16_000, { min: 1, max: 1_000_000 }),
  /** Messages a window keeps (older turns are dropped whole). */
  chatHistoryMessages: int("TOOLMESH_CHAT_HISTORY_MESSAGES", 40, { min: 2, max: 10_000 }),
  /** How long an idle window is kept. */
  chatSessionTtlSeconds: int("TOOLMESH_CHAT_SESSION_TTL_SECONDS", 7 * 24 * 3600, {
    min: 1,
    max: 3650 * 24 * 3600,
  }),
  /** Model replies one chat message may take (each may call tools) before it stops. */
  chatMaxSteps: int("TOOLMESH_CHAT_MAX_STEPS", 8, { min: 1, max: 100 }),
  /** The longest one chat message may take, model and tools included. */
  chatTimeoutMs: int("TOOLMESH_CHAT_TIMEOUT_MS", 2 * MINUTE, { min: 100, max: 60 * MINUTE }),

  /** Tasks the CodingAgent builds at once; the others wait in the queue. */
  codingConcurrency: int("TOOLMESH_CODING_CONCURRENCY", 1, { min: 1, max: 64 }),
  /** Tool calls one task may make. */
  codingMaxSteps: int("TOOLMESH_CODING_MAX_STEPS", 40, { min: 1, max: 10_000 }),
  /** The longest one task may take. */
  codingTimeoutMs: int("TOOLMESH_CODING_TIMEOUT_MS", 20 * MINUTE, {
    min: SECOND,
    max: 24 * 60 * MINUTE,
  }),
  /** Model tokens one task may use. */
  codingMaxTokens: int("TOOLMESH_CODING_MAX_TOKENS", 500_000, { min: 1, max: 1_000_000_000 }),
  /** Pending tasks one principal may have queued at once. */
  codingMaxQueuedPerOwner: int("TOOLMESH_CODING_MAX_QUEUED", 20, { min: 1, max: 10_000 }),
  /** How long finished tasks are kept. */
  taskTtlDays: int("TOOLMESH_TASK_TTL_DAYS", 30, { min: 1, max: 3650 }),
  /** Build-log entries a task keeps (the last ones). */
  taskLogEntries: int("TOOLMESH_TASK_LOG_ENTRIES", 200, { min: 10, max: 5000 }),

  /**
   * Where the coding tools are served (ToolBackendService) for the Dispatcher to call: bound on
   * this host and port (0: a free one), registered at the advertised address (host:port by
   * default; another container's name under compose).
   */
  codingToolsHost: str("TOOLMESH_CODING_TOOLS_HOST", "127.0.0.1"),
  codingToolsPort: port("TOOLMESH_CODING_TOOLS_PORT", 0),
  codingToolsAdvertise: optionalStr("TOOLMESH_CODING_TOOLS_ADVERTISE"),
  /** The Docker Engine the sandboxes run on. */
  dockerSocket: str("TOOLMESH_DOCKER_SOCKET", "/var/run/docker.sock"),
  /** A local image to build in; unset: one built FROM scratch with TOOLMESH_CODING_BUSYBOX. */
  codingImage: optionalStr("TOOLMESH_CODING_IMAGE"),
  /** A statically linked busybox, the sandbox image's shell and tools (Debian: busybox-static). */
  codingBusybox: str("TOOLMESH_CODING_BUSYBOX", "/bin/busybox"),
  /** The sandbox's network: none (default), or host (it can then reach the stack's ports). */
  codingNetwork: oneOf("TOOLMESH_CODING_NETWORK", ["none", "host"], "none"),
  codingMemoryBytes: int("TOOLMESH_CODING_MEMORY_BYTES", 512 * 1024 * 1024, {
    min: 6 * 1024 * 1024,
    max: 64 * 1024 * 1024 * 1024,
  }),
  codingCpuMillis: int("TOOLMESH_CODING_CPU_MILLIS", 1000, { min: 1, max: 64_000 }),
  codingPids: int("TOOLMESH_CODING_PIDS", 128, { min: 1, max: 32_768 }),
  /** The longest one command in the sandbox may run. */
  codingCommandTimeoutMs: int("TOOLMESH_CODING_COMMAND_TIMEOUT_MS", 2 * MINUTE, {
    min: 100,
    max: 60 * MINUTE,
  }),
  /** uv, for Python tools; its sandboxes see the host's /usr read-only (Python lives there). */
  codingUv: str("TOOLMESH_CODING_UV", "uv"),
  codingUvEnabled: bool("TOOLMESH_CODING_UV_ENABLED", true),

  /** An IM server to connect to (ws:// or wss://); unset: no IM client. */
  imUrl: optionalUrl("TOOLMESH_IM_URL", ["ws:", "wss:"]),
  imContact: str("TOOLMESH_IM_CONTACT", "tool_agent"),
  /** The toolmesh credential IM windows act with (their view of tools, their tasks). */
  imTokenFile: optionalStr("TOOLMESH_IM_TOKEN_FILE"),
  /** The longest wait between reconnection attempts. */
  imMaxBackoffMs: int("TOOLMESH_IM_MAX_BACKOFF_MS", 30 * SECOND, { min: 100, max: 10 * MINUTE }),
};

export type ToolAgentConfig = ConfigOf<typeof toolAgentConfig>;
