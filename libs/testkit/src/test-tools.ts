import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { ToolSpecSchema } from "@toolmesh/proto";
import {
  defineTool,
  type ServedTools,
  serveTools,
  type ToolDefinition,
  ToolError,
  toolSpec,
} from "@toolmesh/sdk";
import { Collector } from "./eventually.js";
import type { TestStack } from "./stack.js";

/** What the test tools saw, for tests to await and assert on. */
export interface ToolLog {
  /** Call ids of slow-tool calls that started. */
  started: Collector<string>;
  /** Call ids of slow-tool calls whose signal the Dispatcher aborted. */
  aborted: Collector<string>;
  /** "<label> start" and "<label> end" of each counter call, in the order they happened. */
  sideEffects: string[];
  /** Meet-tool calls waiting for their partner. */
  meeting: (() => void)[];
}

/** An empty log for one backend's test tools. */
export function toolLog(): ToolLog {
  return { started: new Collector(), aborted: new Collector(), sideEffects: [], meeting: [] };
}

/** Fields of a tool definition a test sets over a test tool's own (schema, scopes, flags). */
export type ToolOverrides = Partial<Omit<ToolDefinition<never>, "name" | "handler">>;

/**
 * A tool that answers its text as `{ text }` ("" when none was given): the tool a test calls when
 * it checks the chain, not the tool.
 */
export function echoTool(name = "test.echo", overrides: ToolOverrides = {}): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Echoes its text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
    ...overrides,
    handler: (args: { text?: string }) => ({ text: args.text ?? "" }),
  });
}

/** A tool that answers its number as `{ n }` (0 when none was given). */
export function numberTool(
  name = "test.number",
  overrides: ToolOverrides = {},
): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Returns its number.",
    inputSchema: { type: "object", properties: { n: { type: "integer" } } },
    ...overrides,
    handler: (args: { n?: number }) => ({ n: args.n ?? 0 }),
  });
}

/**
 * A tool that waits `ms` milliseconds, or until the Dispatcher gives up; the log says when each
 * call started and which were aborted, so a test awaits them instead of sleeping.
 */
export function slowTool(log: ToolLog, name = "test.slow"): ToolDefinition<never> {
  return defineTool({
    name,
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
  });
}

/** A tool with a side effect: notes "<label> start", waits `ms`, notes "<label> end". */
export function counterTool(log: ToolLog, name = "test.counter"): ToolDefinition<never> {
  return defineTool({
    name,
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
  });
}

/** A tool that returns only once a second call of it runs: only parallel calls finish. */
export function meetTool(log: ToolLog, name = "test.meet"): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Returns once a second call of it is running: only parallel calls finish.",
    inputSchema: { type: "object" },
    timeoutMs: 2000,
    handler: () =>
      new Promise((resolve) => {
        log.meeting.push(() => resolve({ met: true }));
        if (log.meeting.length >= 2) for (const release of log.meeting.splice(0)) release();
      }),
  });
}

/** A tool that always fails with the code no_rows and a message saying what to do. */
export function failingTool(name = "test.fails"): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Always fails with a code.",
    inputSchema: { type: "object" },
    handler: () => {
      throw new ToolError("no_rows", "the table is empty; load data first");
    },
  });
}

/** A tool whose output breaks its own output schema (`n` is a string, the schema says integer). */
export function badOutputTool(name = "test.badoutput"): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Returns output its schema forbids.",
    inputSchema: { type: "object" },
    outputSchema: { type: "object", required: ["n"], properties: { n: { type: "integer" } } },
    handler: () => ({ n: "not a number" }),
  });
}

/**
 * A tool with a side effect that waits for a person's approval where the test registers it so:
 * pays the invoice it is given and notes it in `ran`.
 */
export function payTool(ran: string[], name = "pay.send"): ToolDefinition<never> {
  return defineTool({
    name,
    description: "Pays an invoice; needs a person's approval.",
    sideEffects: true,
    inputSchema: { type: "object", properties: { invoice: { type: "string" } } },
    outputSchema: { type: "object", properties: { paid: { type: "string" } } },
    handler: (args: { invoice: string }) => {
      ran.push(args.invoice);
      return { paid: args.invoice };
    },
  });
}

/**
 * Serves tools with the SDK on a free port and registers them with the stack's Registry as its
 * admin; the tools named in `requiresApproval` wait for an approver, those in
 * `requiresConfirmation` for their caller's confirmation.
 */
export async function serveOnStack(
  stack: TestStack,
  tools: ToolDefinition<never>[],
  options: { requiresApproval?: string[]; requiresConfirmation?: string[] } = {},
): Promise<ServedTools> {
  const held = options.requiresApproval ?? [];
  const confirmed = options.requiresConfirmation ?? [];
  if (held.length === 0 && confirmed.length === 0) {
    return serveTools(tools, { registry: { url: stack.registry.url, token: stack.adminToken } });
  }
  const served = await serveTools(tools, { port: 0 });
  try {
    for (const tool of tools) {
      const spec = create(ToolSpecSchema, toolSpec(tool, served.address));
      spec.requiresApproval = held.includes(spec.name);
      spec.requiresConfirmation = confirmed.includes(spec.name);
      await stack.registryClient.registerTool({ tool: spec }, stack.as(stack.adminToken));
    }
  } catch (error) {
    await served.close();
    throw error;
  }
  return served;
}

/**
 * An echo's input schema that refuses what a validation test sends: a missing or empty text, and
 * any argument but text and the given properties.
 */
export function strictTextSchema(properties: JsonObject = {}): JsonObject {
  return {
    type: "object",
    additionalProperties: false,
    required: ["text"],
    properties: { text: { type: "string", minLength: 1 }, ...properties },
  };
}

/**
 * The strict echo of the chain tests, `test.echo`: it needs a non-empty text and the scope
 * read:test, refuses unknown arguments, emits a CACHE_MISS trace event and answers with the
 * calling agent.
 */
export function tracedEchoTool(): ToolDefinition<never> {
  return defineTool({
    name: "test.echo",
    description: "Echoes its text.",
    inputSchema: strictTextSchema({
      password: { type: "string" },
      lines: {
        type: "object",
        properties: {
          start: { type: "integer", minimum: 1 },
          end: { type: "integer", minimum: 1 },
        },
      },
    }),
    outputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
    requiredScopes: ["read:test"],
    handler: (args: { text: string }, ctx) => {
      ctx.trace("CACHE_MISS", { key: args.text });
      return { text: args.text, agent: ctx.principal.agentId };
    },
  });
}

/**
 * The tools the chain tests serve with the SDK's serveTools, in-process and end to end: one that
 * succeeds with a backend trace event, one that waits, one with side effects, one that finishes
 * only when two calls run at once, and two that fail in different ways.
 */
export function chainTestTools(log: ToolLog): ToolDefinition<never>[] {
  return [
    tracedEchoTool(),
    slowTool(log),
    counterTool(log),
    meetTool(log),
    failingTool(),
    badOutputTool(),
  ];
}
