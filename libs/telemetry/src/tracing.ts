import {
  type Attributes,
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { IdGenerator } from "@opentelemetry/sdk-trace";

export type { Span } from "@opentelemetry/api";

/** A process's tracer: exporting over OTLP when the OTEL_* variables ask for it, else not recording. */
export interface Tracing {
  /** True when spans are recorded and exported. */
  readonly enabled: boolean;
  /**
   * Starts a call's root span. With a valid `traceparent` it is that span's child; otherwise its
   * trace id is `traceId`, so the OpenTelemetry trace and toolmesh's trace are one id.
   */
  startRoot(name: string, options: RootSpanOptions): Span;
  /** Starts a child of `parent`, now or at `startTime` (epoch ms). */
  startChild(parent: Span, name: string, attributes?: Attributes, startTime?: number): Span;
  /** Sends what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export interface RootSpanOptions {
  traceId: string;
  /** The caller's W3C traceparent header, if it sent one. */
  traceparent?: string | undefined;
  attributes?: Attributes;
  /** Epoch ms the work began, when earlier than now. */
  startTime?: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context a W3C traceparent carries, or undefined when it is malformed or all zero. */
export function parseTraceparent(header: string | null | undefined): SpanContext | undefined {
  if (!header || header.length > 512) return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as string[];
  if (version === "ff" || (version === "00" && rest)) return undefined;
  if (/^0+$/.test(traceId as string) || /^0+$/.test(spanId as string)) return undefined;
  return {
    traceId: traceId as string,
    spanId: spanId as string,
    traceFlags: Number.parseInt(flags as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
}

/** The W3C traceparent that makes a downstream call a child of `span`. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}`;
}

/** Ends a span with an error status (a refusal, a failed attempt). */
export function endWithError(span: Span, message: string, attributes?: Attributes): void {
  if (attributes) span.setAttributes(attributes);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}

/** `bytes` random bytes as hex, never all zero (W3C trace context forbids zero ids). */
function randomHexId(bytes: number): string {
  let id = "";
  while (id.length < bytes * 2)
    id += ((Math.random() * 2 ** 32) >>> 0).toString(16).padStart(8, "0");
  return /^0+$/.test(id) ? randomHexId(bytes) : id;
}

/**
 * Trace ids for root spans: the one the next root span must carry, handed over synchronously
 * just before it starts; random otherwise.
 */
class ChosenTraceIds implements IdGenerator {
  next: string | undefined;
  generateTraceId(): string {
    const id = this.next ?? randomHexId(16);
    this.next = undefined;
    return id;
  }
  generateSpanId(): string {
    return randomHexId(8);
  }
}

/** True when the standard variables ask for OTLP trace export. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "otlp").split(",").map((s) => s.trim());
  if (!exporters.includes("otlp")) return false;
  return Boolean(
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim(),
  );
}

/**
 * The tracer of a process named `service`. Export is on when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and OTEL_SDK_DISABLED is not true; the exporter
 * reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout) itself, OTEL_SERVICE_NAME
 * overrides the name and OTEL_BSP_SCHEDULE_DELAY / OTEL_BSP_MAX_QUEUE_SIZE tune batching.
 * Off, a call still has a span context (for traceparent) but nothing is recorded.
 */
export async function startTracing(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Tracing> {
  if (!tracingRequested(env)) return untraced();
  // Loaded only when export is on: the SDK and its exporter are some 4 MB of a process's memory.
  const [
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { BatchSpanProcessor, TracerProvider },
  ] = await Promise.all([
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
  ]);
  const ids = new ChosenTraceIds();
  const provider = new TracerProvider({
    idGenerator: ids,
    resource: resourceFromAttributes({
      "service.name": env.OTEL_SERVICE_NAME?.trim() || `toolmesh-${service}`,
      "service.namespace": "toolmesh",
    }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: tracesEndpoint(env) }),
        scheduledDelayMillis: positiveInt(env.OTEL_BSP_SCHEDULE_DELAY, 5000),
        maxQueueSize: positiveInt(env.OTEL_BSP_MAX_QUEUE_SIZE, 2048),
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer("toolmesh");
  return {
    enabled: true,
    startRoot(name, options) {
      const remote = parseTraceparent(options.traceparent);
      let parent: Context = ROOT_CONTEXT;
      if (remote) parent = trace.setSpanContext(ROOT_CONTEXT, remote);
      else ids.next = options.traceId;
      const span = tracer.startSpan(
        name,
        {
          kind: SpanKind.SERVER,
          attributes: { "toolmesh.trace_id": options.traceId, ...options.attributes },
          ...(options.startTime !== undefined ? { startTime: options.startTime } : {}),
        },
        parent,
      );
      ids.next = undefined;
      return span;
    },
    startChild(parent, name, attributes, startTime) {
      return tracer.startSpan(
        name,
        {
          ...(attributes ? { attributes } : {}),
          ...(startTime !== undefined ? { startTime } : {}),
        },
        trace.setSpan(context.active(), parent),
      );
    },
    shutdown: () => provider.shutdown(),
  };
}

/** A positive integer from a standard OTEL_BSP_* variable, or the fallback. */
function positiveInt(text: string | undefined, fallback: number): number {
  const value = Number(text?.trim());
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/** Where spans go: the traces endpoint as given, or the base endpoint with /v1/traces (the OTLP rule). */
function tracesEndpoint(env: NodeJS.ProcessEnv): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() ?? "";
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}

/**
 * Tracing that records nothing: a call gets one span context (the caller's trace, or its
 * toolmesh trace id, and a fresh span id) so a backend still receives a traceparent, and every
 * step reuses it. Export off costs about a microsecond a call instead of a tracer's spans.
 */
export function untraced(): Tracing {
  return {
    enabled: false,
    startRoot(_name, options) {
      const remote = parseTraceparent(options.traceparent);
      return trace.wrapSpanContext({
        traceId: remote?.traceId ?? options.traceId,
        spanId: randomHexId(8),
        traceFlags: remote?.traceFlags ?? TraceFlags.NONE,
      });
    },
    startChild: (parent) => parent,
    shutdown: async () => {},
  };
}
