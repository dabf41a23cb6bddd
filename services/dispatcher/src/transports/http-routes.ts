import type http from "node:http";
import type http2 from "node:http2";
import type { RequestAuthenticator } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import type { ToolAgentLink } from "./agent/agent-forward.js";
import { chat } from "./facade/chat.js";
import { authenticateRequest, errorResponse, json } from "./facade/http-errors.js";
import { type FacadeDeps, listTools, runTool } from "./facade/routes.js";
import { sendWebResponse, toWebRequest } from "./facade/web-bridge.js";
import type { McpRoutes } from "./mcp/lazy-endpoint.js";
import { RESOURCE_METADATA_PATH } from "./mcp/mcp-paths.js";

/** The part of a Node response (HTTP/1.1 or HTTP/2) the routes write. */
type NodeResponse = {
  on(event: "close", listener: () => void): unknown;
};

export interface HttpRoutesDeps {
  facade: FacadeDeps;
  /** Where `POST /chat` goes. */
  toolAgent: ToolAgentLink;
  mcp: McpRoutes;
  authenticate: RequestAuthenticator;
  /** Whether the Dispatcher serves (the health route reports it). */
  serving: () => boolean;
  log: Logger;
}

/**
 * The plain HTTP routes on the Dispatcher's port, beside the RPCs: `/mcp`, the facade
 * (`GET /health`, `GET /tools`, `POST /run_tool`, `POST /chat`) and the protected-resource
 * metadata. Each one
 * authenticates like the RPCs (health and metadata excepted) and runs calls through the chain.
 */
export function createHttpRoutes(deps: HttpRoutesDeps) {
  const route = async (request: Request, peer: string): Promise<Response> => {
    const { pathname } = new URL(request.url);
    const method = request.method;
    if (pathname === "/mcp") return deps.mcp.serve(request, peer);
    if (
      method === "GET" &&
      (pathname === RESOURCE_METADATA_PATH || pathname === "/.well-known/oauth-protected-resource")
    )
      return deps.mcp.metadata(request);
    if (pathname === "/health" && method === "GET") {
      const serving = deps.serving();
      return json(serving ? 200 : 503, { status: serving ? "SERVING" : "NOT_SERVING" });
    }
    if (pathname === "/tools" || pathname === "/run_tool" || pathname === "/chat") {
      const wanted = pathname === "/tools" ? "GET" : "POST";
      if (method !== wanted)
        return json(
          405,
          { code: "unimplemented", message: `use ${wanted} ${pathname}` },
          { allow: wanted },
        );
      try {
        const principal = await authenticateRequest(deps.authenticate, request, peer);
        if (pathname === "/chat")
          return await chat(deps.toolAgent, request, deps.facade.maxBodyBytes);
        return pathname === "/tools"
          ? await listTools(deps.facade, principal, request.headers.get("authorization") ?? "")
          : await runTool(deps.facade, principal, request);
      } catch (error) {
        if (!(error instanceof ConnectError))
          deps.log.error({ err: error }, `${method} ${pathname} failed`);
        return errorResponse(error);
      }
    }
    return errorResponse(
      new ConnectError(
        `no route ${method} ${pathname}: the Dispatcher serves its RPCs, /mcp, GET /health, GET /tools, POST /run_tool and POST /chat`,
        Code.NotFound,
      ),
    );
  };

  return (req: http.IncomingMessage | http2.Http2ServerRequest, res: NodeResponse): void => {
    const aborted = new AbortController();
    res.on("close", () => aborted.abort());
    const socket = req.socket;
    const peer = socket?.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : "unknown";
    route(toWebRequest(req, aborted.signal), peer)
      .catch((error: unknown) => {
        deps.log.error({ err: error }, "HTTP route failed");
        return errorResponse(new ConnectError("internal error", Code.Internal));
      })
      .then((response) => sendWebResponse(res as http.ServerResponse, response))
      .catch((error: unknown) => deps.log.debug({ err: error }, "HTTP response not sent"));
  };
}
