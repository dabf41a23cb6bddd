import { type Logger, type LoggerOptions, pino } from "pino";

export type { Logger } from "pino";

/** Keys whose values never reach a log line, wherever they appear. */
const redactedPaths = [
  "authorization",
  "token",
  "secret",
  "password",
  "api_key",
  "apiKey",
  "*.authorization",
  "*.token",
  "*.secret",
  "*.password",
  "*.api_key",
  "*.apiKey",
  "headers.authorization",
  "req.headers.authorization",
];

/** The root JSON logger of a service; every line carries `service`. */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? "info",
  destination?: pino.DestinationStream,
): Logger {
  const options: LoggerOptions = {
    level,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redactedPaths, censor: "[redacted]" },
    formatters: { level: (label) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A child logger bound to one call, so each line carries its trace_id and call_id. */
export function callLogger(
  log: Logger,
  ids: { trace_id?: string; call_id?: string; tool?: string },
): Logger {
  return log.child(ids);
}

export { createSecretRedactor, defaultSecretKeyPatterns, REDACTED } from "./redact.js";
