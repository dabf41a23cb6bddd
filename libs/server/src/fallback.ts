import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { renderMetrics } from "@toolmesh/telemetry";

/** A handler for the requests no RPC matches (connect-node's fallback). */
export type HttpHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;

/** The parts of an HTTP/1.1 or HTTP/2 compatibility response this file writes. */
interface Response {
  /** The HTTP/2 stream, when the request came over HTTP/2. */
  stream?: {
    respond(headers: Record<string, string | number>, options: { endStream: boolean }): void;
  };
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(): unknown;
  end(body: string): unknown;
}

/**
 * What a port answers outside its RPCs: `GET /metrics` (Prometheus text), UNIMPLEMENTED with
 * proper gRPC trailers for an unknown gRPC or gRPC-Web method (a trailers-only response, which
 * every gRPC client reads), then the service's own HTTP routes (`routes`, such as the
 * Dispatcher's /mcp or the console's app), and 404 for anything else.
 */
export function fallbackHandler(
  log: { warn(obj: object, msg: string): void },
  routes?: HttpHandler,
): HttpHandler {
  return (req, response) => {
    const res = response as unknown as Response;
    const path = (req.url ?? "").split("?", 1)[0] ?? "";
    const contentType = String(req.headers["content-type"] ?? "");
    if (path === "/metrics" && (req.method === "GET" || req.method === "HEAD")) {
      req.resume();
      renderMetrics().then(
        ({ contentType: type, body }) => {
          res.writeHead(200, { "content-type": type });
          if (req.method === "HEAD") res.end();
          else res.end(body);
        },
        (error: unknown) => {
          log.warn({ err: error }, "could not render metrics");
          res.writeHead(500, { "content-type": "text/plain" });
          res.end("metrics are unavailable; see the service's log\n");
        },
      );
      return;
    }
    if (contentType.startsWith("application/grpc")) {
      req.resume();
      const message = `unknown method ${path}; \`grpcurl -plaintext <host:port> list\` shows the services this port serves`;
      const headers = {
        "content-type": contentType.startsWith("application/grpc-web")
          ? "application/grpc-web+proto"
          : "application/grpc",
        "grpc-status": "12",
        "grpc-message": encodeURIComponent(message),
      };
      // gRPC over HTTP/2 needs the status in one HEADERS frame that ends the stream
      // (trailers-only); the compatibility API would send an empty DATA frame after it.
      if (res.stream) res.stream.respond({ ":status": 200, ...headers }, { endStream: true });
      else {
        res.writeHead(200, headers);
        res.end();
      }
      return;
    }
    if (routes) {
      routes(req, response);
      return;
    }
    req.resume();
    res.writeHead(404, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        code: "unimplemented",
        message: `no RPC or page at ${path}; RPCs are POST /<package>.<Service>/<Method>, metrics are GET /metrics`,
      }),
    );
  };
}
