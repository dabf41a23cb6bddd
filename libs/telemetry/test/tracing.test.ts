import { describe, expect, it } from "vitest";
import { parseTraceparent, startTracing, traceparentOf, tracingRequested } from "../src/index.js";

describe("tracing", () => {
  it("is off unless an OTLP endpoint is set, and OTEL_SDK_DISABLED or another exporter turns it off", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" })).toBe(true);
    expect(
      tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" }),
    ).toBe(true);
    expect(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_SDK_DISABLED: "true" }),
    ).toBe(false);
    expect(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_EXPORTER: "none" }),
    ).toBe(false);
  });

  it("parses a W3C traceparent and refuses malformed or all-zero ones", () => {
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(parseTraceparent(`00-${trace}-00f067aa0ba902b7-01`)).toMatchObject({
      traceId: trace,
      spanId: "00f067aa0ba902b7",
      traceFlags: 1,
    });
    for (const bad of [
      "",
      "00-zz-00f067aa0ba902b7-01",
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${trace}-${"0".repeat(16)}-01`,
      `ff-${trace}-00f067aa0ba902b7-01`,
      `00-${trace}-00f067aa0ba902b7-01-extra`,
      "x".repeat(600),
    ])
      expect(parseTraceparent(bad), bad).toBeUndefined();
    // A later version may carry more fields; its first four are read.
    expect(parseTraceparent(`01-${trace}-00f067aa0ba902b7-01-more`)?.traceId).toBe(trace);
  });

  it("off, still gives a call a span context: the caller's trace, or the toolmesh trace id", async () => {
    const tracing = await startTracing("test", {});
    expect(tracing.enabled).toBe(false);
    const own = tracing.startRoot("call", { traceId: "a".repeat(32) });
    expect(traceparentOf(tracing.startChild(own, "attempt"))).toMatch(/^00-a{32}-[0-9a-f]{16}-00$/);
    const caller = tracing.startRoot("call", {
      traceId: "a".repeat(32),
      traceparent: `00-${"b".repeat(32)}-00f067aa0ba902b7-01`,
    });
    expect(traceparentOf(caller)).toMatch(/^00-b{32}-[0-9a-f]{16}-01$/);
    expect(caller.spanContext().spanId).not.toBe("00f067aa0ba902b7");
  });
});
