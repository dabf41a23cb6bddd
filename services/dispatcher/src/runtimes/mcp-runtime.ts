import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Client } from "@modelcontextprotocol/client";
import type { Logger } from "@toolmesh/log";
import {
  BackendEventSchema,
  CallErrorSchema,
  McpOperation,
  type McpRuntime as McpRuntimeSpec,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";
import { failure } from "./grpc-runtime.js";
import {
  checkCapable,
  McpConnection,
  type McpSettings,
  MISSING_CAPABILITY,
  type ServerNotice,
} from "./mcp-connection.js";
import {
  type Attempt,
  type AttemptResult,
  type CallerChannel,
  CallerRefusal,
  type InputRequest,
  type ToolRuntime,
} from "./runtime.js";

export type { McpSettings, ServerNotice };

/** The server's side of a connection: what the import reads from the handshake. */
export interface McpServerInfo {
  name: string;
  version: string;
}

/** Everything an import reads of a server: its tools, prompts, resources and templates. */
export interface McpServerListing {
  server: McpServerInfo;
  tools: JsonObject[];
  prompts: JsonObject[];
  resources: JsonObject[];
  resourceTemplates: JsonObject[];
  /** Whether the server completes prompt and template arguments (`completions`). */
  completions: boolean;
}

/** Rounds of input one request may ask for before the call fails (a server that never ends). */
const MAX_INPUT_ROUNDS = 16;
/** Where the per-request envelope carries the client's capabilities and log level (2026-07-28). */
const CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities";
const LOG_LEVEL_META = "io.modelcontextprotocol/logLevel";

/**
 * Tools, prompts and resources of existing MCP servers (`mcp` runtime): streamable HTTP, or a
 * stdio command started on demand. One connection per server, shared by its entries. A tool's
 * result maps to its output as structuredContent when the server gives it, else
 * `{"content": [blocks]}`; `isError` results are failures carrying the server's text. What a
 * server asks mid-call (elicitation, sampling, roots: a 2025-11-25 server's request, a
 * 2026-07-28 server's input-required result) goes to the call's caller, and the answer back.
 */
export class McpRuntime implements ToolRuntime {
  private readonly connections = new Map<string, McpConnection>();
  private readonly listeners = new Set<(notice: ServerNotice) => void>();

  constructor(
    private readonly settings: McpSettings,
    private readonly log: Logger,
  ) {}

  /** Hears what servers announce outside calls (resources updated, lists changed). */
  onNotice(listener: (notice: ServerNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async invoke(attempt: Attempt): Promise<AttemptResult> {
    const kind = attempt.tool.spec?.runtime?.kind;
    if (kind?.case !== "mcp")
      return failure("backend_misconfigured", "the tool has no MCP server", false);
    const spec = kind.value;
    const args = (attempt.request.arguments ?? {}) as JsonObject;
    const options = {
      signal: attempt.signal,
      timeout: Math.max(1, attempt.request.deadlineMs),
      onprogress: (progress: object) =>
        attempt.onEvent(
          create(BackendEventSchema, {
            kind: TraceEventKind.CUSTOM,
            customKind: "MCP_PROGRESS",
            payload: JSON.parse(JSON.stringify(progress)) as JsonObject,
          }),
        ),
    };
    try {
      const connection = this.connectionOf(spec, attempt.secrets);
      return await connection.with(attempt, async (client) => {
        const meta = envelopeOf(attempt.caller);
        const complete = args.complete as JsonObject | undefined;
        if (complete && spec.operation !== McpOperation.TOOL) {
          const ref: JsonObject =
            spec.operation === McpOperation.PROMPT
              ? { type: "ref/prompt", name: spec.tool }
              : { type: "ref/resource", uri: spec.tool };
          return ok(await client.complete(completion(ref, complete), options));
        }
        switch (spec.operation) {
          case McpOperation.PROMPT: {
            const prompt = { name: spec.tool, arguments: args.arguments ?? {}, _meta: meta };
            return ok(await withInput(client, "prompts/get", prompt, attempt.caller, options));
          }
          case McpOperation.RESOURCE:
          case McpOperation.RESOURCE_TEMPLATE: {
            const uri = typeof args.uri === "string" ? args.uri : spec.tool;
            if (typeof args.subscribe === "boolean") {
              await connection.subscribe(client, uri, args.subscribe);
              return ok({});
            }
            const read = { uri, _meta: meta };
            return ok(await withInput(client, "resources/read", read, attempt.caller, options));
          }
          default: {
            const call = { name: spec.tool, arguments: args, _meta: meta };
            return toolResult(await withInput(client, "tools/call", call, attempt.caller, options));
          }
        }
      });
    } catch (error) {
      if (attempt.signal.aborted) return failure("interrupted", "the call was interrupted", false);
      if (error instanceof CallerRefusal) return callerFailed(error);
      const code = (error as { code?: unknown }).code;
      if (typeof code === "number" && code > -32800 && code <= -32000 && code !== -32001) {
        const data = (error as { data?: unknown }).data;
        return {
          ok: false,
          error: create(CallErrorSchema, {
            code: code === MISSING_CAPABILITY ? "missing_client_capability" : "backend_error",
            message: `the MCP server refused the call: ${messageOf(error)}`,
            details: {
              jsonrpc_code: code,
              ...(data !== undefined ? { data: JSON.parse(JSON.stringify(data)) } : {}),
            },
          }),
          transient: false,
        };
      }
      return failure(
        "backend_unavailable",
        `the MCP server is unavailable: ${messageOf(error)}`,
        true,
      );
    }
  }

  /** Lists a server's tools, prompts, resources and templates, and its handshake (ImportMcpServer). */
  async listServer(spec: McpRuntimeSpec, secrets?: CallSecretValues): Promise<McpServerListing> {
    return this.connectionOf(spec, secrets).with(undefined, async (client) => {
      const capabilities = client.getServerCapabilities() ?? {};
      const info = client.getServerVersion();
      const listed = <T>(offered: unknown, list: () => Promise<T>, empty: T) =>
        offered ? list() : Promise.resolve(empty);
      const [tools, prompts, resources, templates] = await Promise.all([
        listed(capabilities.tools, () => client.listTools(undefined, { cacheMode: "bypass" }), {
          tools: [],
        }),
        listed(capabilities.prompts, () => client.listPrompts(undefined, { cacheMode: "bypass" }), {
          prompts: [],
        }),
        listed(
          capabilities.resources,
          () => client.listResources(undefined, { cacheMode: "bypass" }),
          { resources: [] },
        ),
        listed(
          capabilities.resources,
          () => client.listResourceTemplates(undefined, { cacheMode: "bypass" }),
          { resourceTemplates: [] },
        ),
      ]);
      const json = (items: unknown[]) => JSON.parse(JSON.stringify(items)) as JsonObject[];
      return {
        server: { name: info?.name ?? "", version: info?.version ?? "" },
        tools: json(tools.tools),
        prompts: json(prompts.prompts),
        resources: json(resources.resources),
        resourceTemplates: json(templates.resourceTemplates),
        completions: Boolean(capabilities.completions),
      };
    });
  }

  /**
   * The connection to a server, one per distinct set of the caller's secrets (a user's token is
   * a connection of that user's), keyed on where they came from, never on their values.
   */
  private connectionOf(spec: McpRuntimeSpec, secrets?: CallSecretValues): McpConnection {
    const key = JSON.stringify([
      spec.url,
      spec.headers,
      spec.command,
      spec.args,
      spec.env,
      spec.workingDir,
      secrets?.fingerprint ?? "",
    ]);
    let connection = this.connections.get(key);
    if (!connection) {
      connection = new McpConnection(
        spec,
        this.settings,
        this.log,
        (notice) => {
          for (const listener of this.listeners) listener(notice);
        },
        secrets?.injected,
        // A connection with a caller's secrets is that caller's: forgotten once idle, so the
        // connections of every user and token ever seen do not pile up.
        secrets ? () => this.connections.delete(key) : undefined,
      );
      this.connections.set(key, connection);
    }
    return connection;
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
    this.connections.clear();
  }
}

/**
 * A request to a server, its input-required rounds run with the caller: each round's questions
 * go to the caller (all at once), and the request is sent again with the answers and the
 * server's requestState, until the server answers for good.
 */
async function withInput(
  client: Client,
  method: "tools/call" | "prompts/get" | "resources/read",
  params: JsonObject,
  caller: CallerChannel | undefined,
  options: { signal: AbortSignal; timeout: number },
): Promise<JsonObject> {
  let round = params;
  if (caller?.presupplied && Object.keys(caller.presupplied).length > 0)
    round = { ...params, inputResponses: caller.presupplied };
  for (let rounds = 0; ; rounds++) {
    const result = (await client.request({ method, params: round } as never, {
      ...options,
      allowInputRequired: true,
    })) as JsonObject;
    if (result.resultType !== "input_required") return result;
    const requests = (result.inputRequests ?? {}) as unknown as Record<string, InputRequest>;
    if (!caller)
      throw new CallerRefusal(
        MISSING_CAPABILITY,
        `the tool asks its caller for input (${describe(requests)}), and this caller cannot answer: call it over MCP, or answer with AnswerInput`,
      );
    if (rounds >= MAX_INPUT_ROUNDS)
      throw new CallerRefusal(
        -32603,
        `the tool asked for input ${MAX_INPUT_ROUNDS} times without an end`,
      );
    const answers = await Promise.all(
      Object.entries(requests).map(async ([key, request]) => {
        checkCapable(caller, request.method);
        return [key, await caller.ask(key, request)] as const;
      }),
    );
    round = {
      ...params,
      inputResponses: Object.fromEntries(answers),
      ...(typeof result.requestState === "string" ? { requestState: result.requestState } : {}),
    };
  }
}

/** The per-request envelope of a 2026-07-28 server: what this call's caller can answer. */
function envelopeOf(caller: CallerChannel | undefined): JsonObject {
  return {
    [CAPABILITIES_META]: caller?.capabilities ?? {},
    ...(caller?.logLevel ? { [LOG_LEVEL_META]: caller.logLevel } : {}),
  };
}

function completion(ref: JsonObject, complete: JsonObject) {
  return {
    ref,
    argument: complete.argument,
    ...(complete.context ? { context: complete.context } : {}),
  } as never;
}

function ok(result: object): AttemptResult {
  return { ok: true, output: JSON.parse(JSON.stringify(result)) as JsonObject };
}

/** A tool's result as its output: structuredContent, else its content blocks; isError fails. */
function toolResult(result: JsonObject): AttemptResult {
  if (result.isError === true)
    return failure("tool_error", textOf(result.content) || "the MCP tool reported an error", false);
  const structured = result.structuredContent;
  const output =
    structured !== null && typeof structured === "object" && !Array.isArray(structured)
      ? (structured as JsonObject)
      : ({ content: JSON.parse(JSON.stringify(result.content ?? [])) } as JsonObject);
  return { ok: true, output };
}

/** A call that ended because its caller could not (or did not) answer the tool. */
function callerFailed(refusal: CallerRefusal): AttemptResult {
  return {
    ok: false,
    error: create(CallErrorSchema, {
      code: refusal.code === MISSING_CAPABILITY ? "missing_client_capability" : "input_unavailable",
      message: refusal.message,
      details: { jsonrpc_code: refusal.code, ...(refusal.data ? { data: refusal.data } : {}) },
    }),
    transient: false,
  };
}

function describe(requests: Record<string, InputRequest>): string {
  return Object.values(requests)
    .map((r) => r.method)
    .join(", ");
}

/** The text blocks of an MCP result, joined. */
function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .filter((block): block is { type: "text"; text: string } => block?.type === "text")
    .map((block) => block.text)
    .join("\n");
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
