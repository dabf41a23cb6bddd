import { AsyncLocalStorage } from "node:async_hooks";
import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Client, McpSubscription } from "@modelcontextprotocol/client";
import type { Logger } from "@toolmesh/log";
import {
  BackendEventSchema,
  type McpRuntime as McpRuntimeSpec,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";
import { type Attempt, type CallerChannel, CallerRefusal } from "./runtime.js";

/** How MCP servers are reached, from the Dispatcher's configuration. */
export interface McpSettings {
  /** Close a server's connection (and stop a stdio server) after this long without calls. */
  idleTimeoutMs: number;
}

/** What a server announces outside any call: a resource that changed, a list that changed. */
export type ServerNotice =
  | { kind: "resource_updated"; uri: string }
  | { kind: "list_changed"; list: "tools" | "prompts" | "resources" };

/** The MCP methods a server may ask its client, and the capability each needs. */
const CALLER_METHODS: Record<string, string> = {
  "elicitation/create": "elicitation",
  "sampling/createMessage": "sampling",
  "roots/list": "roots",
};

/** The MCP log levels, least severe first (RFC 5424's, as MCP names them). */
export const LOG_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/**
 * The attempt a message from a server belongs to. Over streamable HTTP, a server's request or
 * log message during a call arrives on that call's own response stream, read in the async
 * context of the call; connections are opened outside any call, so a stdio server's messages
 * (one pipe for every call) carry no attempt.
 */
const attemptContext = new AsyncLocalStorage<Attempt>();

/** One MCP server, connected on first use and closed when idle. */
export class McpConnection {
  private client: Promise<Client> | undefined;
  /** The SDK's error for a server's request, once the SDK is loaded (no request comes before). */
  private protocolError: (code: number | undefined, message: string, data?: unknown) => Error = (
    _code,
    message,
  ) => new Error(message);
  private readonly inFlight = new Set<Attempt>();
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly asked = new WeakMap<Attempt, number>();
  /** Resource URIs subscribed on this connection, and the listen stream that carries them. */
  private readonly subscribed = new Set<string>();
  private listening: McpSubscription | undefined;

  constructor(
    private readonly spec: McpRuntimeSpec,
    private readonly settings: McpSettings,
    private readonly log: Logger,
    private readonly notice: (notice: ServerNotice) => void,
    /** The caller's secrets for this server: headers over HTTP, environment over stdio. */
    private readonly injected: CallSecretValues["injected"] = [],
    /** Told when the connection closes for idleness (a user's connection is then forgotten). */
    private readonly onIdle: () => void = () => {},
  ) {}

  /**
   * Runs `use` with a connected client, on behalf of `attempt` when there is one (its caller
   * answers what the server asks meanwhile); a failed connection is dropped so the next call
   * redials.
   */
  async with<T>(attempt: Attempt | undefined, use: (client: Client) => Promise<T>): Promise<T> {
    if (attempt) this.inFlight.add(attempt);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    try {
      if (!this.client) {
        this.client = attemptContext.exit(() => this.open());
        this.client.catch(() => {
          this.client = undefined;
        });
      }
      const client = await this.client;
      return attempt ? await attemptContext.run(attempt, () => use(client)) : await use(client);
    } finally {
      if (attempt) this.inFlight.delete(attempt);
      this.armIdle();
    }
  }

  private async open(): Promise<Client> {
    const spec = this.spec;
    // The MCP client SDK (about 10 MB of memory) is loaded by the first MCP server used.
    const [sdk, { StdioClientTransport }] = await Promise.all([
      import("@modelcontextprotocol/client"),
      import("@modelcontextprotocol/client/stdio"),
    ]);
    const { Client, ProtocolError, ProtocolErrorCode, StreamableHTTPClientTransport } = sdk;
    this.protocolError = (code, message, data) =>
      new ProtocolError(code ?? ProtocolErrorCode.MethodNotFound, message, data);
    const client = new Client(
      { name: "toolmesh-dispatcher", version: "0.1.0" },
      {
        versionNegotiation: { mode: "auto" },
        // Every answer comes from the call's caller, once per round: the rounds are ours to run.
        inputRequired: { autoFulfill: false },
        capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} },
      },
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
    for (const method of Object.keys(CALLER_METHODS))
      client.setRequestHandler(
        method as "elicitation/create",
        (request) => this.askCaller(method, (request.params ?? {}) as JsonObject) as never,
      );
    client.setNotificationHandler("notifications/message", (notification) =>
      this.logged(notification.params as JsonObject),
    );
    client.setNotificationHandler("notifications/resources/updated", (notification) =>
      this.notice({ kind: "resource_updated", uri: notification.params.uri }),
    );
    for (const list of ["tools", "prompts", "resources"] as const)
      client.setNotificationHandler(`notifications/${list}/list_changed`, () =>
        this.notice({ kind: "list_changed", list }),
      );
    client.onclose = () => {
      this.client = undefined;
      this.listening = undefined;
      this.subscribed.clear();
    };
    await client.connect(transport);
    const info = client.getServerVersion();
    this.log.info(
      {
        server: info?.name,
        version: info?.version,
        via: spec.url ? "http" : "stdio",
        era: client.getProtocolEra(),
      },
      "connected to MCP server",
    );
    // A 2025-11-25 server logs by connection, not by request: it sends everything, and each
    // call's caller gets what it asked for.
    if (client.getProtocolEra() === "legacy" && client.getServerCapabilities()?.logging)
      await client.setLoggingLevel("debug").catch(() => {});
    return client;
  }

  /**
   * Subscribes to (or unsubscribes from) a resource's updates: resources/subscribe on a
   * 2025-11-25 server; on a 2026-07-28 server, one subscriptions/listen stream per connection
   * carrying every URI subscribed, opened again when the set changes.
   */
  async subscribe(client: Client, uri: string, on: boolean): Promise<void> {
    if (client.getProtocolEra() !== "modern") {
      await (on ? client.subscribeResource({ uri }) : client.unsubscribeResource({ uri }));
      return;
    }
    if (on) this.subscribed.add(uri);
    else this.subscribed.delete(uri);
    const previous = this.listening;
    this.listening = undefined;
    await previous?.close();
    if (this.subscribed.size > 0)
      this.listening = await client.listen({ resourceSubscriptions: [...this.subscribed] });
  }

  /** The attempt a server's message belongs to: its call's, or the only one running. */
  private attemptNow(): Attempt | undefined {
    const attempt = attemptContext.getStore();
    if (attempt) return attempt;
    if (this.inFlight.size === 1) return this.inFlight.values().next().value;
    return undefined;
  }

  /** A server's request to its client during a call, relayed to the call's caller. */
  private async askCaller(method: string, params: JsonObject): Promise<JsonObject> {
    const attempt = this.attemptNow();
    const caller = attempt?.caller;
    if (!attempt || !caller) {
      throw this.protocolError(
        undefined,
        this.inFlight.size > 1 && !attemptContext.getStore()
          ? `toolmesh cannot tell which of ${this.inFlight.size} running calls asks ${method} (a stdio server asking mid-call while others run); it cannot be answered`
          : `the caller of this call cannot answer ${method}`,
      );
    }
    const count = (this.asked.get(attempt) ?? 0) + 1;
    this.asked.set(attempt, count);
    try {
      checkCapable(caller, method);
      return await caller.ask(`${method.split("/")[0]}-${count}`, { method, params });
    } catch (error) {
      if (error instanceof CallerRefusal)
        throw this.protocolError(error.code, error.message, error.data);
      throw error;
    }
  }

  /** A server's log message during a call: an event of the call, relayed as its caller wants. */
  private logged(params: JsonObject): void {
    this.attemptNow()?.onEvent(
      create(BackendEventSchema, {
        kind: TraceEventKind.CUSTOM,
        customKind: "MCP_LOG",
        payload: JSON.parse(JSON.stringify(params)) as JsonObject,
      }),
    );
  }

  private armIdle(): void {
    if (this.inFlight.size > 0) return;
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

/** The JSON-RPC code of a request that needs a capability the client did not declare. */
export const MISSING_CAPABILITY = -32021;

/** Refuses a question the caller declared no capability for (the spec's -32021). */
export function checkCapable(caller: CallerChannel, method: string): void {
  const capability = CALLER_METHODS[method];
  if (!capability) throw new CallerRefusal(-32601, `${method} is not a request a caller answers`);
  if (caller.capabilities[capability] === undefined)
    throw new CallerRefusal(
      MISSING_CAPABILITY,
      `the tool asks its caller ${method}, and this caller did not declare the ${capability} capability`,
      { requiredCapabilities: { [capability]: {} } },
    );
}
