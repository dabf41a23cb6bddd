export { SpanStatusCode } from "@opentelemetry/api";
export { watchConsumerLag } from "./consumer-lag.js";
export {
  collectProcessMetrics,
  counter,
  gauge,
  histogram,
  LATENCY_BUCKETS,
  metricsRegistry,
  renderMetrics,
} from "./metrics.js";
export { type RpcObserver, rpcMetricsInterceptor, rpcObserver } from "./rpc-metrics.js";
export {
  endWithError,
  parseTraceparent,
  type RootSpanOptions,
  type Span,
  startTracing,
  type Tracing,
  traceparentOf,
  tracingRequested,
  untraced,
} from "./tracing.js";
