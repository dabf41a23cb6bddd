import { invalidField } from "@toolmesh/errors";
import { CURRENCY } from "@toolmesh/policy";
import type { LocalRuntime, ToolSpec } from "@toolmesh/proto";
import { maxCount } from "./field-checks.js";

/** Bounds of how a tool is run, cached, priced and protected. */
export const operationLimits = {
  maxConcurrency: 1024,
  idleTimeoutMs: 24 * 60 * 60 * 1000,
  /** Instances of one local or docker tool on one Dispatcher (each a process or a container). */
  maxInstances: 16,
  warmHours: 24,
  minHealthIntervalMs: 100,
  maxHealthIntervalMs: 60 * 60 * 1000,
  cacheTtlMs: 24 * 60 * 60 * 1000,
  cacheEntries: 100_000,
  /** A million units of any currency a call or a second. */
  priceMicros: 10n ** 12n,
  breakerFailures: 1000,
  breakerOpenMs: 60 * 60 * 1000,
} as const;

/** What local and docker runtimes say about running their instances (the same fields in both). */
export type SupervisionFields = Pick<
  LocalRuntime,
  | "maxConcurrency"
  | "idleTimeoutMs"
  | "minInstances"
  | "maxInstances"
  | "warmHours"
  | "healthIntervalMs"
>;

/**
 * Checks a supervised runtime's concurrency, idle time and instances; `at` names a field of it
 * (`tool.runtime.local.min_instances`).
 */
export function checkSupervision(
  at: (field: string) => string,
  runtime: SupervisionFields,
  fixedPort = 0,
): void {
  const most = (field: string, value: number, max: number, unit = "") => {
    if (value > max) throw invalidField(at(field), `is ${value}; at most ${max}${unit} allowed`);
  };
  most("max_concurrency", runtime.maxConcurrency, operationLimits.maxConcurrency);
  most("idle_timeout_ms", runtime.idleTimeoutMs, operationLimits.idleTimeoutMs, " (24 hours)");
  most("max_instances", runtime.maxInstances, operationLimits.maxInstances);
  const max = runtime.maxInstances || 1;
  if (runtime.minInstances > max)
    throw invalidField(
      at("min_instances"),
      `is ${runtime.minInstances}, more than max_instances (${max}); raise max_instances or lower min_instances`,
    );
  if (fixedPort !== 0 && max > 1)
    throw invalidField(
      at("max_instances"),
      `is ${max}, but every instance would listen on port ${fixedPort}; set port 0 (the Dispatcher chooses a free port per instance) or max_instances 1`,
    );
  if (
    runtime.healthIntervalMs !== 0 &&
    (runtime.healthIntervalMs < operationLimits.minHealthIntervalMs ||
      runtime.healthIntervalMs > operationLimits.maxHealthIntervalMs)
  )
    throw invalidField(
      at("health_interval_ms"),
      `must be 0 (the Dispatcher's default) or between ${operationLimits.minHealthIntervalMs} and ${operationLimits.maxHealthIntervalMs}`,
    );
  maxCount(at("warm_hours"), runtime.warmHours.length, operationLimits.warmHours);
  runtime.warmHours.forEach((window, i) => {
    const field = at(`warm_hours[${i}]`);
    if (window.startHour > 23 || window.endHour < 1 || window.endHour > 24)
      throw invalidField(field, "start_hour must be 0-23 and end_hour 1-24 (UTC)");
    if (window.endHour <= window.startHour)
      throw invalidField(
        field,
        "end_hour must be after start_hour; a window across midnight is two windows",
      );
    if (window.weekdays.some((day) => day > 6))
      throw invalidField(`${field}.weekdays`, "days are 0 (Sunday) to 6 (Saturday)");
  });
  if (runtime.warmHours.length > 0 && runtime.minInstances === 0)
    throw invalidField(at("warm_hours"), "apply to min_instances: set min_instances too");
}

/** Checks a tool's warm instances, cache, price and circuit breaker. */
export function checkOperation(spec: ToolSpec): void {
  const runtime = spec.runtime?.kind;
  if (
    (runtime?.case === "local" || runtime?.case === "docker") &&
    runtime.value.minInstances > 0 &&
    spec.secrets.length > 0
  )
    throw invalidField(
      `tool.runtime.${runtime.case}.min_instances`,
      "cannot keep instances warm for a tool that names secrets: each caller's instances carry that caller's values and start on their first call; set min_instances 0",
    );
  if (spec.cacheTtlMs > 0) {
    if (spec.sideEffects || !spec.idempotent)
      throw invalidField(
        "tool.cache_ttl_ms",
        "only a read-only, idempotent tool may be cached (side_effects false, idempotent true): a cached call does not run the tool",
      );
    if (spec.cacheTtlMs > operationLimits.cacheTtlMs)
      throw invalidField(
        "tool.cache_ttl_ms",
        `is ${spec.cacheTtlMs}; at most ${operationLimits.cacheTtlMs} (24 hours) allowed`,
      );
  } else if (spec.cacheMaxEntries > 0) {
    throw invalidField("tool.cache_max_entries", "needs cache_ttl_ms: it bounds the tool's cache");
  }
  if (spec.cacheMaxEntries > operationLimits.cacheEntries)
    throw invalidField(
      "tool.cache_max_entries",
      `is ${spec.cacheMaxEntries}; at most ${operationLimits.cacheEntries} allowed`,
    );
  const price = spec.price;
  if (price) {
    if (!CURRENCY.test(price.currency))
      throw invalidField(
        "tool.price.currency",
        "must be 1-8 upper-case letters or digits starting with a letter (USD, EUR, CREDITS)",
      );
    for (const [field, value] of [
      ["per_call_micros", price.perCallMicros],
      ["per_second_micros", price.perSecondMicros],
    ] as const)
      if (value > operationLimits.priceMicros)
        throw invalidField(
          `tool.price.${field}`,
          `is ${value}; at most ${operationLimits.priceMicros} (millionths: a million units) allowed`,
        );
  }
  const breaker = spec.circuitBreaker;
  if (breaker) {
    if (breaker.failures > operationLimits.breakerFailures)
      throw invalidField(
        "tool.circuit_breaker.failures",
        `is ${breaker.failures}; at most ${operationLimits.breakerFailures} allowed`,
      );
    if (breaker.openMs > operationLimits.breakerOpenMs)
      throw invalidField(
        "tool.circuit_breaker.open_ms",
        `is ${breaker.openMs}; at most ${operationLimits.breakerOpenMs} (1 hour) allowed`,
      );
  }
}
