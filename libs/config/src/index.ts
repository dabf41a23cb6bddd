import { type ServiceName, serviceUrls } from "./endpoints.js";

/** A reader takes one variable from the environment and returns its typed value or throws. */
export type Reader<T> = (env: NodeJS.ProcessEnv) => T;

/** Raised when the environment holds a bad value; the message names every bad variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

class VariableError extends Error {
  override name = "VariableError";
}

function raw(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** A string variable; without a default it is required. */
export function str(name: string, fallback?: string): Reader<string> {
  return (env) => {
    const value = raw(env, name) ?? fallback;
    if (value === undefined) throw new VariableError(`${name} is required`);
    return value;
  };
}

/** An optional string variable: undefined when unset. */
export function optionalStr(name: string): Reader<string | undefined> {
  return (env) => raw(env, name);
}

/** An integer variable within [min, max]. */
export function int(
  name: string,
  fallback: number,
  range: { min?: number; max?: number } = {},
): Reader<number> {
  return (env) => {
    const text = raw(env, name);
    if (text === undefined) return fallback;
    const min = range.min ?? Number.MIN_SAFE_INTEGER;
    const max = range.max ?? Number.MAX_SAFE_INTEGER;
    if (!/^-?\d+$/.test(text))
      throw new VariableError(`${name}=${JSON.stringify(text)} is not an integer`);
    const value = Number(text);
    if (value < min || value > max) {
      throw new VariableError(`${name}=${value} is out of range; expected ${min} to ${max}`);
    }
    return value;
  };
}

/** A TCP port (0 lets the operating system choose). */
export function port(name: string, fallback: number): Reader<number> {
  return int(name, fallback, { min: 0, max: 65535 });
}

/** A boolean variable: true/false, 1/0, yes/no. */
export function bool(name: string, fallback: boolean): Reader<boolean> {
  return (env) => {
    const text = raw(env, name)?.toLowerCase();
    if (text === undefined) return fallback;
    if (["1", "true", "yes", "on"].includes(text)) return true;
    if (["0", "false", "no", "off"].includes(text)) return false;
    throw new VariableError(`${name}=${JSON.stringify(text)} is not a boolean; use true or false`);
  };
}

/** One of a fixed set of words. */
export function oneOf<const T extends string>(
  name: string,
  choices: readonly T[],
  fallback: T,
): Reader<T> {
  return (env) => {
    const text = raw(env, name);
    if (text === undefined) return fallback;
    if (!(choices as readonly string[]).includes(text)) {
      throw new VariableError(
        `${name}=${JSON.stringify(text)} is not one of ${choices.join(", ")}`,
      );
    }
    return text as T;
  };
}

/** A URL with one of the given protocols (such as `nats:`). */
export function url(name: string, fallback: string, protocols: readonly string[]): Reader<string> {
  return (env) => {
    const text = raw(env, name) ?? fallback;
    for (const part of text.split(",")) {
      let parsed: URL;
      try {
        parsed = new URL(part.trim());
      } catch {
        throw new VariableError(`${name}=${JSON.stringify(text)} is not a URL`);
      }
      if (!protocols.includes(parsed.protocol)) {
        throw new VariableError(
          `${name}=${JSON.stringify(text)} must use ${protocols.join(" or ")}`,
        );
      }
    }
    return text;
  };
}

/** An optional URL with one of the given protocols: undefined when unset. */
export function optionalUrl(
  name: string,
  protocols: readonly string[],
): Reader<string | undefined> {
  return (env) => (raw(env, name) === undefined ? undefined : url(name, "", protocols)(env));
}

/** A comma-separated list of non-empty words. */
export function list(name: string, fallback: readonly string[]): Reader<string[]> {
  return (env) => {
    const text = raw(env, name);
    if (text === undefined) return [...fallback];
    return text
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
  };
}

const BYTE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};

/** A size in bytes: a whole number with an optional unit (KiB, MiB, GiB, TiB), such as `512MiB`. */
export function bytes(
  name: string,
  fallback: number,
  range: { min?: number; max?: number } = {},
): Reader<number> {
  return (env) => {
    const text = raw(env, name);
    if (text === undefined) return fallback;
    const match = /^(\d+)\s*([a-z]*)$/i.exec(text);
    const unit = BYTE_UNITS[(match?.[2] ?? "").toLowerCase()];
    if (!match || unit === undefined) {
      throw new VariableError(
        `${name}=${JSON.stringify(text)} is not a size; use bytes or a number with KiB, MiB, GiB or TiB, such as 512MiB`,
      );
    }
    const value = Number(match[1]) * unit;
    const min = range.min ?? 0;
    const max = range.max ?? Number.MAX_SAFE_INTEGER;
    if (value < min || value > max) {
      throw new VariableError(`${name}=${text} is out of range; expected ${min} to ${max} bytes`);
    }
    return value;
  };
}

/** How a process authenticates to NATS (libs/nats BusCredentials); at most one way may be set. */
export interface NatsCredentialsConfig {
  nkeyFile?: string;
  credsFile?: string;
  user?: string;
  password?: string;
}

/**
 * TOOLMESH_NATS_NKEY_FILE, TOOLMESH_NATS_CREDS, or TOOLMESH_NATS_USER with TOOLMESH_NATS_PASSWORD;
 * unset: connect without credentials (only a NATS without authorization accepts that).
 */
export const natsCredentials: Reader<NatsCredentialsConfig> = (env) => {
  const nkeyFile = raw(env, "TOOLMESH_NATS_NKEY_FILE");
  const credsFile = raw(env, "TOOLMESH_NATS_CREDS");
  const user = raw(env, "TOOLMESH_NATS_USER");
  const password = env.TOOLMESH_NATS_PASSWORD;
  const ways = [
    nkeyFile && "TOOLMESH_NATS_NKEY_FILE",
    credsFile && "TOOLMESH_NATS_CREDS",
    user && "TOOLMESH_NATS_USER",
  ];
  const set = ways.filter((w): w is string => Boolean(w));
  if (set.length > 1) {
    throw new VariableError(
      `${set.join(" and ")} are both set; a process uses one NATS credential`,
    );
  }
  if (password !== undefined && password !== "" && !user) {
    throw new VariableError("TOOLMESH_NATS_PASSWORD is set without TOOLMESH_NATS_USER");
  }
  return {
    ...(nkeyFile ? { nkeyFile } : {}),
    ...(credsFile ? { credsFile } : {}),
    ...(user ? { user, password: password ?? "" } : {}),
  };
};

/**
 * How often nats-server flushes JetStream writes to disk: `always` (every write, before its
 * ack) or a duration such as `2m` or `10s`, nats-server's own default being two minutes.
 */
export function syncInterval(name: string, fallback: string): Reader<string> {
  return (env) => {
    const text = raw(env, name) ?? fallback;
    if (text !== "always" && !/^\d+(ms|s|m|h)$/.test(text)) {
      throw new VariableError(
        `${name}=${JSON.stringify(text)} is neither "always" nor a duration such as 10s or 2m`,
      );
    }
    return text;
  };
}

const MiB = 1024 * 1024;
const limit = (name: string, fallback: number) =>
  bytes(name, fallback, { min: 1024 * 1024, max: 1024 ** 5 });

/**
 * Byte limits of the event streams and buckets, read by every process so that every writer of a
 * stream gives it the same definition (docs/configuration.md, retention and limits).
 */
export const busLimitsConfig = {
  streamMaxBytes: (env: NodeJS.ProcessEnv) => ({
    records: limit("TOOLMESH_RECORDS_MAX_BYTES", 1024 * MiB)(env),
    callback: limit("TOOLMESH_CALLBACK_STREAM_MAX_BYTES", 512 * MiB)(env),
    changes: limit("TOOLMESH_CHANGES_MAX_BYTES", 128 * MiB)(env),
  }),
  bucketMaxBytes: (env: NodeJS.ProcessEnv) => ({
    registry: limit("TOOLMESH_REGISTRY_BUCKET_MAX_BYTES", 64 * MiB)(env),
    permission: limit("TOOLMESH_PERMISSION_BUCKET_MAX_BYTES", 64 * MiB)(env),
    vault: limit("TOOLMESH_VAULT_BUCKET_MAX_BYTES", 64 * MiB)(env),
    dispatcher: limit("TOOLMESH_DISPATCHER_BUCKET_MAX_BYTES", 256 * MiB)(env),
    callIds: limit("TOOLMESH_CALL_IDS_BUCKET_MAX_BYTES", 256 * MiB)(env),
    dispatchers: limit("TOOLMESH_DISPATCHERS_BUCKET_MAX_BYTES", 16 * MiB)(env),
    approvals: limit("TOOLMESH_APPROVALS_BUCKET_MAX_BYTES", 64 * MiB)(env),
    mcpTasks: limit("TOOLMESH_MCP_TASKS_BUCKET_MAX_BYTES", 64 * MiB)(env),
    agentSessions: limit("TOOLMESH_AGENT_SESSIONS_BUCKET_MAX_BYTES", 256 * MiB)(env),
    agentTasks: limit("TOOLMESH_AGENT_TASKS_BUCKET_MAX_BYTES", 256 * MiB)(env),
  }),
};

/**
 * How calls whose Dispatcher vanished are found and closed: the Dispatcher beats at a third of
 * TOOLMESH_DISPATCHER_LOST_AFTER_MS, and Audit's sweeper closes a call whose start record has no
 * end record once it is past its deadline and the grace, reading the same two settings.
 */
export const callSweepConfig = {
  /** How often calls left open (and held calls past their expiry) are looked for. */
  sweepIntervalMs: int("TOOLMESH_SWEEP_INTERVAL_MS", 5000, { min: 100, max: 600_000 }),
  /** A Dispatcher whose heartbeat is this old has vanished; its open calls are closed. */
  dispatcherLostAfterMs: int("TOOLMESH_DISPATCHER_LOST_AFTER_MS", 15_000, {
    min: 300,
    max: 600_000,
  }),
  /**
   * How long past its deadline a call may still be writing its end record (a live Dispatcher
   * sends a batch again for TOOLMESH_RECORD_RETRY_MS); after it, the call is closed.
   */
  leaseGraceMs: int("TOOLMESH_LEASE_GRACE_MS", 45_000, { min: 100, max: 3_600_000 }),
};

/** Reads every variable of a spec and reports all bad ones at once. */
export function loadConfig<T extends Record<string, unknown>>(
  spec: { [K in keyof T]: Reader<T[K]> },
  env: NodeJS.ProcessEnv = process.env,
): T {
  const problems: string[] = [];
  const out: Partial<T> = {};
  for (const key of Object.keys(spec) as (keyof T)[]) {
    try {
      out[key] = spec[key](env);
    } catch (error) {
      if (!(error instanceof VariableError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out as T;
}

/** The settings every toolmesh process shares. */
export const commonConfig = {
  natsUrl: url("NATS_URL", "nats://127.0.0.1:4222", ["nats:", "tls:"]),
  host: str("TOOLMESH_HOST", "127.0.0.1"),
  logLevel: oneOf(
    "LOG_LEVEL",
    ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    "info",
  ),
  dataDir: str("TOOLMESH_DATA_DIR", ".toolmesh"),
  maxMessageBytes: int("TOOLMESH_MAX_MESSAGE_BYTES", 4 * 1024 * 1024, {
    min: 1024,
    max: 64 * 1024 * 1024,
  }),
  jetstreamReplicas: int("TOOLMESH_JETSTREAM_REPLICAS", 1, { min: 1, max: 5 }),
  /** How long the event streams (trace, audit input, outcome, callback, changes) keep messages. */
  streamMaxAgeDays: int("TOOLMESH_STREAM_MAX_AGE_DAYS", 30, { min: 1, max: 3650 }),
  /**
   * How often a process pings its nats-server; two unanswered pings mark the connection stale and
   * it moves to another node, so a node that hangs or is cut off is left within a few seconds.
   */
  natsPingIntervalMs: int("TOOLMESH_NATS_PING_INTERVAL_MS", 2000, { min: 250, max: 120_000 }),
  /** The same in seconds, for short-lived stacks and tests; overrides the days when set. */
  streamMaxAgeSeconds: int("TOOLMESH_STREAM_MAX_AGE_SECONDS", 0, { min: 0, max: 3650 * 86_400 }),
  /**
   * How far V8 lets the heap grow past what its last full collection kept, in percent (0: V8's
   * own choice, up to four times). A server allocates fast, and the garbage of calls otherwise
   * sits in memory until the heap is several times its live size (hundreds of MB under load).
   * 50, with two malloc arenas (SERVICE_ENV in libs/launcher): measured at c64, the Dispatcher's
   * CPU a call fell by about an eighth against 30 (the calls in flight at each young collection are
   * promoted, and die soon after, so a tighter heap runs a full collection every few hundred ms),
   * and the peak RSS stayed where 30 with glibc's default arenas had it (docs/benchmark.md).
   */
  heapGrowingPercent: int("TOOLMESH_HEAP_GROWING_PERCENT", 50, { min: 0, max: 1000 }),
  /**
   * Whether V8 scavenges the young generation with helper threads (Node's default). Off: every
   * toolmesh process shares the host's cores with the others, and measured on two cores at c64 a
   * Dispatcher scavenge cost 4.4 ms on the main thread plus 3.4 ms on the helper with it, 5.2 ms on
   * the main thread alone without: the helper's CPU is taken from the calls' path.
   */
  parallelScavenge: bool("TOOLMESH_PARALLEL_SCAVENGE", false),
  natsCredentials,
  ...busLimitsConfig,
};

/** The settings every process has, as read. */
export type CommonConfig = ConfigOf<typeof commonConfig>;

/** How long the event streams keep messages, in ms: the seconds when set, else the days. */
export function streamMaxAgeMs(
  config: Pick<CommonConfig, "streamMaxAgeDays" | "streamMaxAgeSeconds">,
): number {
  return config.streamMaxAgeSeconds > 0
    ? config.streamMaxAgeSeconds * 1000
    : config.streamMaxAgeDays * 24 * 60 * 60 * 1000;
}

/** The typed settings a spec of readers produces. */
export type ConfigOf<Spec> = {
  [K in keyof Spec]: Spec[K] extends Reader<infer T> ? T : never;
};

/** Runs a process entry point: a ConfigError prints its message and exits with code 2. */
export function loadOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
export { SERVICE_PORTS, type ServiceName, serviceUrls } from "./endpoints.js";

/**
 * Where another service answers, as its clients find it: `TOOLMESH_<SERVICE>_URL`, else
 * `TOOLMESH_HOST` and `TOOLMESH_<SERVICE>_PORT` (serviceUrls), so one environment configures the
 * stack and the services that call each other.
 */
export function serviceUrl(name: ServiceName): Reader<string> {
  return (env) => serviceUrls(env)[name];
}
export { freePort, portIsFree } from "./ports.js";
