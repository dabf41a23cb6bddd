import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  type GaugeConfiguration,
  Histogram,
  Registry,
} from "prom-client";

/**
 * The process's one metrics registry: what `GET /metrics` on the service's port renders. One per
 * process, so a metric defined by a library and by a service never collide.
 */
export const metricsRegistry = new Registry();

let processMetrics = false;

/** Adds the standard process_* and nodejs_* metrics (CPU, memory, event loop lag) once. */
export function collectProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

/** Latency buckets in seconds, from a cache hit (0.5 ms) to a long tool (60 s). */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** A counter, defined once per process however many times it is asked for (tests start many servers). */
export function counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
  const existing = metricsRegistry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [metricsRegistry] });
}

/** A histogram of seconds, defined once per process. */
export function histogram<L extends string>(
  name: string,
  help: string,
  labelNames: L[],
  buckets = LATENCY_BUCKETS,
): Histogram<L> {
  const existing = metricsRegistry.getSingleMetric(name);
  if (existing) return existing as Histogram<L>;
  return new Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] });
}

/** A gauge, defined once per process; `collect` runs at every scrape. */
export function gauge<L extends string>(
  name: string,
  help: string,
  labelNames: L[],
  collect?: GaugeConfiguration<L>["collect"],
): Gauge<L> {
  const existing = metricsRegistry.getSingleMetric(name);
  if (existing) return existing as Gauge<L>;
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [metricsRegistry],
    ...(collect ? { collect } : {}),
  });
}

/** The Prometheus text exposition of every metric of this process. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}
