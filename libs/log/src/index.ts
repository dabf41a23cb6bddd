import { type Logger, type LoggerOptions, pino } from "pino";
import { createSecretRedactor, redactText } from "./redact.js";

export type { Logger } from "pino";

// Log lines follow the same rule as audit records, trace events and memory files.
const redact = createSecretRedactor();
const redactObject = (object: Record<string, unknown>) => redact(object) as Record<string, unknown>;

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
    formatters: {
      level: (label) => ({ level: label }),
      bindings: redactObject,
      log: redactObject,
    },
    serializers: {
      // The standard serializer's result has its own prototype; a plain copy is walked like any object.
      err: (error: Error) => redact({ ...pino.stdSerializers.err(error) }),
      msg: (message: unknown) => (typeof message === "string" ? redactText(message) : message),
    },
  };
  const root = destination ? pino(options, destination) : pino(options);
  // pino applies the bindings formatter to the root only; children's bindings pass here.
  const child = Object.getPrototypeOf(root).child as Logger["child"];
  root.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, redactObject(bindings), childOptions);
  } as Logger["child"];
  return root;
}

/** The fields a log line about one call carries: its call_id and trace_id. */
export function callFields(call: { callId: string; traceId: string }): {
  call_id: string;
  trace_id: string;
} {
  return { call_id: call.callId, trace_id: call.traceId };
}

export {
  createSecretRedactor,
  defaultSecretKeyPatterns,
  looksSecret,
  REDACTED,
  redactText,
  secretKeyMatcher,
} from "./redact.js";
