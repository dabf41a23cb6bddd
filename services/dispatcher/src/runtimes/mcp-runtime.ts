import { create, type JsonObject } from "@bufbuild/protobuf";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { Logger } from "@toolmesh/log";
import {
  BackendEventSchema,
  type McpRuntime as McpRuntimeSpec,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";
import { failure } from "./grpc-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "./runtime.js";

/** How MCP servers are reached, from the Dispatcher's configuration. */
export interface McpSettings {
  /** Close a server's connection (and stop a stdio server) after this long without calls. */
  idleTimeoutMs: number;
}

/** The server's side of a connection: what the import reads from the handshake. */
export interface McpServerInfo {
  name: string;
  version: string;
}

/** One MCP server, connected on first use and closed when idle. */
class McpConnection {
  private client: Promise<Client> | undefined;
  private inFlight = 0;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly spec: McpRuntimeSpec,
    private readonly settings: McpSettings,
    private readonly log: Logger,
    /** The caller's secrets for this server: headers over HTTP, environment over stdio. */
    private readonly injected: CallSecretValues["injected"] = [],
    /** Told when the connection closes for idleness (a user's connection is then forgotten). */
    private readonly onIdle: () => void = () => {},
  ) {}

  /** Runs `use` with a connected client; a failed connection is dropped so the next call redials. */
  async with<T>(use: (client: Client) => Promise<T>): Promise<T> {
    this.inFlight++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    try {
      if (!this.client) {
        this.client = this.open();
        this.client.catch(() => {
          this.client = undefined;
        });
      }
      return await use(await this.client);
    } finally {
      this.inFlight--;
      this.armIdle();
    }
  }

  private async open(): Promise<Client> {
    const spec = this.spec;
    const client = new Client(
      { name: "toolmesh-dispatcher", version: "0.1.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    const secrets: Record<string, string> = {};
    for (const { injection, text } of this.injected) {
      const target = injection.target;
      if (target.case === "header" || target.case === "env") secrets[target.value] = text;
    }
    const transport = spec.url
      ? new StreamableHTTPClientTransport(new URL(spec.url), {
          requestInit: { headers: { ...spec.headers, ...secrets } },
        })
      : new StdioClientTransport({
          command: spec.command,
          args: spec.args,
          env: { ...(process.env as Record<string, string>), ...spec.env, ...secrets },
          ...(spec.workingDir ? { cwd: spec.workingDir } : {}),
          stderr: "ignore",
        });
    client.onclose = () => {
      this.client = undefined;
    };
    await client.connect(transport);
    const info = client.getServerVersion();
    this.log.info(
      { server: info?.name, version: info?.version, via: spec.url ? "http" : "stdio" },
      "connected to MCP server",
    );
    return client;
  }

  private armIdle(): void {
    if (this.inFlight > 0) return;
    const idleMs = this.spec.idleTimeoutMs || this.settings.idleTimeoutMs;
    this.idleTimer = setTimeout(() => {
      this.onIdle();
      void this.close();
    }, idleMs);
    this.idleTimer.unref();
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const client = this.client;
    this.client = undefined;
    await (await client?.catch(() => undefined))?.close().catch(() => {});
  }
}

/**
 * Tools of existing MCP servers (`mcp` runtime): streamable HTTP, or a stdio command started on
 * demand. One connection per server, shared by its tools; results map to outputs as
 * structuredContent when the server gives it, else `{"content": [blocks]}`; `isError` results are
 * failures carrying the server's text.
 */
export class McpRuntime implements ToolRuntime {
  private readonly connections = new Map<string, McpConnection>();

  constructor(
    private readonly settings: McpSettings,
    private readonly log: Logger,
  ) {}

  async invoke(attempt: Attempt): Promise<AttemptResult> {
    const kind = attempt.tool.spec?.runtime?.kind;
    if (kind?.case !== "mcp")
      return failure("backend_misconfigured", "the tool has no MCP server", false);
    const spec = kind.value;
    try {
      const result = await this.connectionOf(spec, attempt.secrets).with((client) =>
        client.callTool(
          { name: spec.tool, arguments: attempt.request.arguments ?? {} },
          {
            signal: attempt.signal,
            timeout: Math.max(1, attempt.request.deadlineMs),
            onprogress: (progress) =>
              attempt.onEvent(
                create(BackendEventSchema, {
                  kind: TraceEventKind.CUSTOM,
                  customKind: "MCP_PROGRESS",
                  payload: JSON.parse(JSON.stringify(progress)) as JsonObject,
                }),
              ),
          },
        ),
      );
      if (result.isError) {
        return failure(
          "tool_error",
          textOf(result.content) || "the MCP tool reported an error",
          false,
        );
      }
      const structured = result.structuredContent;
      const output =
        structured !== null && typeof structured === "object" && !Array.isArray(structured)
          ? (structured as JsonObject)
          : ({ content: JSON.parse(JSON.stringify(result.content ?? [])) } as JsonObject);
      return { ok: true, output };
    } catch (error) {
      if (attempt.signal.aborted) return failure("interrupted", "the call was interrupted", false);
      const code = (error as { code?: unknown }).code;
      if (typeof code === "number" && code > -32700 && code <= -32000 && code !== -32001) {
        return failure(
          "backend_error",
          `the MCP server refused the call: ${messageOf(error)}`,
          false,
        );
      }
      return failure(
        "backend_unavailable",
        `the MCP server is unavailable: ${messageOf(error)}`,
        true,
      );
    }
  }

  /** Lists every tool of a server and its handshake (ImportMcpServer). */
  async listTools(
    spec: McpRuntimeSpec,
    secrets?: CallSecretValues,
  ): Promise<{ server: McpServerInfo; tools: Awaited<ReturnType<Client["listTools"]>>["tools"] }> {
    return this.connectionOf(spec, secrets).with(async (client) => {
      const listed = await client.listTools(undefined, { cacheMode: "bypass" });
      const info = client.getServerVersion();
      return {
        server: { name: info?.name ?? "", version: info?.version ?? "" },
        tools: listed.tools,
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
