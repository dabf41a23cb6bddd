import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { ServiceName } from "@toolmesh/config";
import type { Logger } from "@toolmesh/log";
import { Health, HealthCheckResponse_ServingStatus } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import { createAssetHandler } from "./assets.js";
import { createRpcProxy, type ProxiedRequest, type ProxiedResponse } from "./proxy.js";

export interface ConsoleDeps {
  /** Where each service answers (serviceUrls from the environment). */
  urls: Record<ServiceName, string>;
  /** The built app. */
  assetsDir: string;
  log: Logger;
  readMaxBytes: number;
}

/**
 * The console's one port: the app, the browser's RPCs forwarded to their services, `GET
 * /api/health` (each service's health, which a browser cannot ask over gRPC), and, as on every
 * port, grpc.health.v1, reflection and /metrics.
 */
export function createConsoleServer(deps: ConsoleDeps): ToolmeshServer {
  const assets = createAssetHandler(deps.assetsDir);
  const proxy = createRpcProxy(deps.urls, deps.log);
  const health = serviceHealth(deps.urls);
  return createToolmeshServer({
    services: [],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    routes() {},
    fallback(req, res) {
      const request = req as unknown as ProxiedRequest;
      const response = res as unknown as ProxiedResponse;
      if (req.method === "GET" && req.url === "/api/health") {
        req.resume();
        health().then((body) => {
          response.writeHead(200, {
            "content-type": "application/json",
            "cache-control": "no-store",
          });
          response.end(JSON.stringify(body));
        });
        return;
      }
      if (assets(request, response) || proxy(request, response)) return;
      req.resume();
      response.writeHead(404, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          code: "not_found",
          message: `nothing at ${req.method} ${req.url}; the console serves its app at / and forwards the services' RPCs`,
        }),
      );
    },
  });
}

/** Asks every service's grpc.health.v1 at once, with a short deadline. */
function serviceHealth(urls: Record<ServiceName, string>) {
  const clients = Object.entries(urls).map(([name, url]) => ({
    name,
    url,
    client: createClient(Health, createGrpcTransport({ baseUrl: url })),
  }));
  return () =>
    Promise.all(
      clients.map(async ({ name, url, client }) => {
        const started = performance.now();
        try {
          const res = await client.check({ service: "" }, { timeoutMs: 2000 });
          return {
            service: name,
            url,
            status: HealthCheckResponse_ServingStatus[res.status] ?? "UNKNOWN",
            ms: Math.round(performance.now() - started),
          };
        } catch (error) {
          return { service: name, url, status: "UNREACHABLE", error: (error as Error).message };
        }
      }),
    );
}
