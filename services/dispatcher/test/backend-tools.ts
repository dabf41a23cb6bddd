import { defineTool, type ToolDefinition, ToolError } from "@toolmesh/sdk";
import type { Collector } from "@toolmesh/testkit";

/** What the backend's tools saw, for tests to await and assert on. */
export interface BackendLog {
  /** Call ids of test.slow calls that started. */
  started: Collector<string>;
  /** Call ids of test.slow calls whose signal the Dispatcher aborted. */
  aborted: Collector<string>;
  /** "<label> start" and "<label> end" of each test.counter call, in the order they happened. */
  sideEffects: string[];
  /** test.meet calls waiting for their partner. */
  meeting: (() => void)[];
}

/**
 * Tools served by a real backend (the SDK's serveTools) for in-process Dispatcher tests: one
 * that succeeds with a backend trace event, one that waits, one with side effects, two that
 * fail in different ways, and one that finishes only when two calls run at once.
 */
export function backendTools(log: BackendLog): ToolDefinition<never>[] {
  return [
    defineTool({
      name: "test.echo",
      description: "Echoes its text.",
      inputSchema: {
        type: "object",
        additionalProperties: false,
        required: ["text"],
        properties: {
          text: { type: "string", minLength: 1 },
          password: { type: "string" },
          lines: {
            type: "object",
            properties: { start: { type: "integer", minimum: 1 } },
          },
        },
      },
      outputSchema: {
        type: "object",
        required: ["text"],
        properties: { text: { type: "string" } },
      },
      requiredScopes: ["read:test"],
      handler: (args: { text: string }, ctx) => {
        ctx.trace("CACHE_MISS", { key: args.text });
        return { text: args.text, agent: ctx.principal.agentId };
      },
    }),
    defineTool({
      name: "test.slow",
      description: "Waits ms milliseconds, or until the Dispatcher gives up.",
      inputSchema: { type: "object", properties: { ms: { type: "integer" } } },
      handler: (args: { ms?: number }, ctx) =>
        new Promise((resolve) => {
          log.started.push(ctx.callId);
          const timer = setTimeout(() => resolve({ waited: args.ms ?? 0 }), args.ms ?? 0);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            log.aborted.push(ctx.callId);
          });
        }),
    }),
    defineTool({
      name: "test.counter",
      description: "Notes a label; a side effect.",
      sideEffects: true,
      inputSchema: {
        type: "object",
        properties: { label: { type: "string" }, ms: { type: "integer" } },
      },
      handler: async (args: { label?: string; ms?: number }) => {
        log.sideEffects.push(`${args.label} start`);
        if (args.ms) await new Promise((resolve) => setTimeout(resolve, args.ms));
        log.sideEffects.push(`${args.label} end`);
        return { count: log.sideEffects.length / 2 };
      },
    }),
    defineTool({
      name: "test.meet",
      description: "Returns once a second call of it is running: only parallel calls finish.",
      inputSchema: { type: "object" },
      timeoutMs: 2000,
      handler: () =>
        new Promise((resolve) => {
          log.meeting.push(() => resolve({ met: true }));
          if (log.meeting.length >= 2) for (const release of log.meeting.splice(0)) release();
        }),
    }),
    defineTool({
      name: "test.fails",
      description: "Always fails with a code.",
      inputSchema: { type: "object" },
      handler: () => {
        throw new ToolError("no_rows", "the table is empty; load data first");
      },
    }),
    defineTool({
      name: "test.badoutput",
      description: "Returns output its schema forbids.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object", required: ["n"], properties: { n: { type: "integer" } } },
      handler: () => ({ n: "not a number" }),
    }),
  ];
}
