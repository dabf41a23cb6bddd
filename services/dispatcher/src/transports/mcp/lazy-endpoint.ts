import type { ToolSource } from "../../catalog/tool-catalog.js";
import type { ServerNotice } from "../../runtimes/mcp-runtime.js";
import type { McpEndpoint, McpEndpointOptions } from "./mcp-endpoint.js";
import type { McpToolsDeps } from "./mcp-tools.js";

/** What the HTTP routes need of `/mcp`. */
export interface McpRoutes {
  serve(request: Request, peer: string): Promise<Response>;
  metadata(request: Request): Response | Promise<Response>;
}

/**
 * `/mcp`, loaded by its first request: the MCP SDK (and the endpoint built on it) takes about
 * 15 MB of a Dispatcher's memory, which one whose agents speak only gRPC never needs. The build
 * puts the endpoint in a chunk of its own, so nothing of it runs before then.
 */
export class LazyMcpEndpoint implements McpRoutes {
  private endpoint: Promise<McpEndpoint> | undefined;
  private tools: ToolSource | undefined;
  private stopFollowing: (() => void) | undefined;

  constructor(
    private readonly deps: McpToolsDeps,
    /** `allowedOrigins` are added to the localhost names, which the SDK knows. */
    private readonly options: McpEndpointOptions,
  ) {}

  private load(): Promise<McpEndpoint> {
    if (!this.endpoint) {
      this.endpoint = Promise.all([
        import("./mcp-endpoint.js"),
        import("@modelcontextprotocol/server"),
      ]).then(([{ McpEndpoint }, { localhostAllowedOrigins }]) => {
        const endpoint = new McpEndpoint(this.deps, {
          ...this.options,
          allowedOrigins: [...localhostAllowedOrigins(), ...this.options.allowedOrigins],
        });
        if (this.tools) this.stopFollowing = endpoint.followRegistry(this.tools);
        return endpoint;
      });
      // A module that failed to load is tried again by the next request.
      this.endpoint.catch(() => {
        this.endpoint = undefined;
      });
    }
    return this.endpoint;
  }

  async serve(request: Request, peer: string): Promise<Response> {
    return (await this.load()).serve(request, peer);
  }

  async metadata(request: Request): Promise<Response> {
    return (await this.load()).metadata(request);
  }

  /**
   * Follows the registry for the endpoint's subscriptions (from its load on: before the first
   * request there are none to tell).
   */
  followRegistry(tools: ToolSource): () => void {
    this.tools = tools;
    void this.endpoint?.then((endpoint) => {
      this.stopFollowing ??= endpoint.followRegistry(tools);
    });
    return () => {
      this.tools = undefined;
      this.stopFollowing?.();
    };
  }

  /** Passes on what an imported server announces, to subscriptions there can only be once loaded. */
  serverNotice(notice: ServerNotice): void {
    void this.endpoint?.then((endpoint) => endpoint.serverNotice(notice));
  }

  async close(): Promise<void> {
    await (await this.endpoint?.catch(() => undefined))?.close();
  }
}
