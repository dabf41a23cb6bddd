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
};

/** The settings every process has, as read. */
export type CommonConfig = ConfigOf<typeof commonConfig>;

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
