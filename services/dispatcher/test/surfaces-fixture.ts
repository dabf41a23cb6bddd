import { AuditAction, type AuditRecord, TraceEventKind } from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import { defineTool, registerTools, type ServedTools, serveTools } from "@toolmesh/sdk";
import {
  type CallRecords,
  collectRecords,
  echoTool,
  freePort,
  startStack,
  strictTextSchema,
  type TestStack,
} from "@toolmesh/testkit";

/**
 * A stack whose Dispatcher knows where the Registry listens (GET /tools reads the groups), and a
 * backend with data.echo, mail.send (a side effect) and data.fail, for the tests of the ways an
 * agent reaches a tool besides Dispatch.
 */
export interface Surfaces {
  stack: TestStack;
  served: ServedTools;
  /** A JWT of surface-agent, granted everything. */
  agent: string;
  traces: CallRecords["traces"];
  audits: CallRecords["audits"];
  outcomes: CallRecords["outcomes"];
  /** The recipients mail.send was called with. */
  sideEffects: string[];
  /** A URL on the Dispatcher's port. */
  url(path: string): string;
  /** An authorization header carrying a token. */
  bearer(token: string): { authorization: string };
  /** What a call left behind, without the ids and times that differ between two calls. */
  recordsOf(find: (a: AuditRecord) => boolean): ReturnType<typeof summarise>;
  /**
   * The records of a plain Dispatch of data.echo (text "via-dispatch"), made on first use: what
   * a call through any other surface must leave too.
   */
  dispatchRecords(): ReturnType<typeof summarise>;
  /** Finds the audit record of the call whose argument text is `text`. */
  byText(text: string): (a: AuditRecord) => boolean;
  stop(): Promise<void>;
}

/** Starts the stack and the backend, registers the tools and grants surface-agent everything. */
export async function startSurfaces(): Promise<Surfaces> {
  const sideEffects: string[] = [];
  const registryPort = await freePort();
  // GET /tools reads the groups from the Registry: the Dispatcher is told where it listens.
  const stack = await startStack({
    serviceEnv: {
      registry: { TOOLMESH_REGISTRY_PORT: String(registryPort) },
      dispatcher: { TOOLMESH_REGISTRY_URL: `http://127.0.0.1:${registryPort}` },
    },
  });
  let served: ServedTools | undefined;
  const stop = async () => {
    await served?.close();
    await stack.stop();
  };
  try {
    const { traces, audits, outcomes } = collectRecords(stack.nc);
    const agent = await stack.agentToken("surface-agent");
    await stack.grantAll("surface-agent");
    const tools = [
      echoTool("data.echo", {
        idempotent: true,
        inputSchema: strictTextSchema({ limit: { type: "integer", minimum: 1 } }),
        outputSchema: { type: "object", properties: { text: { type: "string" } } },
      }),
      defineTool({
        name: "mail.send",
        description: "Records a mail; a side effect.",
        sideEffects: true,
        inputSchema: { type: "object", required: ["to"], properties: { to: { type: "string" } } },
        handler: (args: { to: string }) => {
          sideEffects.push(args.to);
          return { sent: args.to };
        },
      }),
      defineTool({
        name: "data.fail",
        description: "Always fails.",
        inputSchema: { type: "object", properties: { text: { type: "string" } } },
        handler: () => {
          throw new Error("the data source is down");
        },
      }),
    ];
    served = await serveTools(tools);
    await registerTools(tools, served.address, {
      url: stack.registry.url,
      token: stack.adminToken,
    });
    const recordsOf = (find: (a: AuditRecord) => boolean) =>
      summarise({ traces, audits, outcomes }, find);
    let dispatched: ReturnType<typeof summarise> | undefined;
    const dispatchRecords = () => {
      dispatched ??= stack
        .dispatcherClient()
        .dispatch({ tool: "data.echo", arguments: { text: "via-dispatch" } }, stack.as(agent))
        .then(() => recordsOf((a) => a.arguments?.text === "via-dispatch"));
      return dispatched;
    };
    return {
      stack,
      served,
      agent,
      traces,
      audits,
      outcomes,
      sideEffects,
      url: (path) => `${stack.dispatcher.url}${path}`,
      bearer: (token) => ({ authorization: `Bearer ${token}` }),
      recordsOf,
      dispatchRecords,
      byText: (text) => (a) => a.arguments?.text === text,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What the call whose audit record `find` matches left behind, without its ids and times. */
async function summarise(records: CallRecords, find: (a: AuditRecord) => boolean) {
  const [first] = await records.audits.waitFor(find);
  if (!first) throw new Error("no audit record");
  // A call that ran has its start (with its arguments) and its end: one record when it ended
  // soon after it started (Audit chains the two together), else a start record and an end record.
  const ran = startsCall(first);
  const [record = first] =
    ran && !endsCall(first)
      ? await records.audits.waitFor(
          (a) => a.callId === first.callId && a.action === AuditAction.TOOL_CALL,
        )
      : [first];
  const events = await records.traces.waitFor((e) => e.callId === record.callId, ran ? 3 : 1);
  const outcome = ran
    ? (await records.outcomes.waitFor((o) => o.callId === record.callId))[0]
    : undefined;
  return {
    audit: {
      action: record.action,
      tool: record.tool,
      agentId: record.agentId,
      status: record.status,
      errorCode: record.errorCode,
      arguments: first.arguments,
      source: record.source,
    },
    trace: events.map((e) => [TraceEventKind[e.kind], e.tool, e.agentId]),
    outcome: outcome && { status: outcome.status, output: outcome.output, tool: outcome.tool },
  };
}
