import {
  createMcpHandler,
  type McpHttpHandler,
  originValidationResponse,
} from "@modelcontextprotocol/server";
import type { RequestAuthenticator } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import type { Principal } from "@toolmesh/proto";
import { authenticateRequest, errorResponse, json } from "../facade/http-errors.js";
import { RESOURCE_METADATA_PATH } from "./mcp-paths.js";
import { createMcpToolServer, type McpToolsDeps } from "./mcp-tools.js";

export interface McpEndpointOptions {
  authenticate: RequestAuthenticator;
  /** Hostnames a browser's Origin may name; any other Origin gets 403 (DNS rebinding). */
  allowedOrigins: string[];
  /** Authorization servers announced in the protected-resource metadata (RFC 9728). */
  authorizationServers: string[];
  maxBodyBytes: number;
  log: Logger;
}

export { RESOURCE_METADATA_PATH } from "./mcp-paths.js";

/**
 * `/mcp` over streamable HTTP, both revisions in use: 2026-07-28 (stateless, per-request
 * `_meta`, headers checked against the body) and 2025-11-25 (initialize, served statelessly).
 * Every request is authenticated with the same bearer tokens as the RPCs; the token stays here.
 */
export class McpEndpoint {
  private readonly handler: McpHttpHandler;

  constructor(
    deps: McpToolsDeps,
    private readonly options: McpEndpointOptions,
  ) {
    this.handler = createMcpHandler(
      (ctx) => {
        const principal = ctx.authInfo?.extra?.principal as Principal | undefined;
        if (!principal) throw new Error("an MCP request reached the server unauthenticated");
        return createMcpToolServer(deps, {
          principal,
          era: ctx.era,
          signal: ctx.requestInfo?.signal ?? new AbortController().signal,
        });
      },
      {
        legacy: "stateless",
        maxRequestBodySize: options.maxBodyBytes,
        onerror: (error) => options.log.debug({ err: error }, "MCP request rejected"),
      },
    );
  }

  /** Tells open subscriptions that the tool list changed (a registry change). */
  toolsChanged(): void {
    this.handler.notify.toolsChanged();
  }

  async serve(request: Request, peer: string): Promise<Response> {
    const rejected = originValidationResponse(request, this.options.allowedOrigins);
    if (rejected) return rejected;
    let principal: Principal;
    try {
      principal = await authenticateRequest(this.options.authenticate, request, peer);
    } catch (error) {
      return errorResponse(error, resourceMetadataUrl(request));
    }
    return this.handler.fetch(request, {
      authInfo: { token: "", clientId: principal.agentId, scopes: [], extra: { principal } },
    });
  }

  /** RFC 9728 metadata: the resource, how to send the token, who issues tokens. */
  metadata(request: Request): Response {
    const origin = new URL(request.url).origin;
    return json(200, {
      resource: `${origin}/mcp`,
      resource_name: "toolmesh",
      bearer_methods_supported: ["header"],
      ...(this.options.authorizationServers.length > 0
        ? { authorization_servers: this.options.authorizationServers }
        : {}),
    });
  }

  close(): Promise<void> {
    return this.handler.close();
  }
}

function resourceMetadataUrl(request: Request): string {
  return `${new URL(request.url).origin}${RESOURCE_METADATA_PATH}`;
}
