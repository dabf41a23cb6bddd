import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  createContextKey,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { type ConnectNodeAdapterOptions, connectNodeAdapter } from "@connectrpc/connect-node";
import type { Code } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { Health, HealthCheckResponse_ServingStatus } from "@toolmesh/proto";
import { rpcMetricsInterceptor, rpcObserver } from "@toolmesh/telemetry";
import { fallbackHandler } from "./fallback.js";
import { fastRoute, serveUnary, type UnaryRoutes } from "./grpc-unary.js";
import { createHealthService, HealthState } from "./health.js";
import { compatRequest } from "./http2-streams.js";
import { addReflection } from "./reflection.js";

/** The caller's network address (`ip:port`), for logs and per-source limits. */
export const peerAddressKey = createContextKey<string>("unknown", {
  description: "the remote address of the connection",
});

/** What a service needs to build its routes. */
export interface RouteContext {
  /** Aborted when the server starts draining, so long-lived streams can end. */
  shutdownSignal: AbortSignal;
}

export interface ServerOptions {
  /** The toolmesh services this server serves, for health reporting. */
  services: DescService[];
  routes: (router: ConnectRouter, context: RouteContext) => void;
  log: Logger;
  /** Largest request message accepted; larger ones fail with RESOURCE_EXHAUSTED. */
  readMaxBytes: number;
  interceptors?: Interceptor[];
  /**
   * Serves the requests no RPC matches (plain HTTP routes on the same port), after `/metrics`
   * and unknown gRPC methods; 404 without it.
   */
  fallback?: ConnectNodeAdapterOptions["fallback"];
  /**
   * Unary methods served on a fast path for plain binary gRPC over HTTP/2 (grpc-unary.ts); every
   * other request, these methods over Connect or gRPC-Web included, goes through connect-node.
   * Their handlers authenticate the call themselves: the interceptors do not run for them.
   */
  fastUnary?: UnaryRoutes;
}

export interface ToolmeshServer {
  readonly health: HealthState;
  /** Starts listening; port 0 picks a free port. */
  listen(port: number, host: string): Promise<ListeningServer>;
}

export interface ListeningServer {
  readonly port: number;
  readonly host: string;
  /** http://host:port, for Connect and gRPC clients alike. */
  readonly url: string;
  /** Reports NOT_SERVING, ends streams, lets unary calls finish, then closes within graceMs. */
  close(graceMs?: number): Promise<void>;
}

/**
 * One h2c port serving gRPC, gRPC-Web and Connect, plus grpc.health.v1.Health, gRPC server
 * reflection and `GET /metrics`.
 */
export function createToolmeshServer(options: ServerOptions): ToolmeshServer {
  const health = new HealthState(options.services.map((s) => s.typeName));
  const shutdown = new AbortController();
  const connectHandler = connectNodeAdapter({
    readMaxBytes: options.readMaxBytes,
    shutdownSignal: shutdown.signal,
    // Metrics outermost, so they count the calls authentication refuses too.
    interceptors: [rpcMetricsInterceptor(), ...(options.interceptors ?? [])],
    fallback: fallbackHandler(options.log, options.fallback),
    contextValues: (req) => {
      const socket = req.socket;
      return createContextValues().set(
        peerAddressKey,
        socket?.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : "unknown",
      );
    },
    routes(router) {
      router.service(Health, createHealthService(health));
      addReflection(router, [...options.services, Health]);
      options.routes(router, { shutdownSignal: shutdown.signal });
    },
  });

  const observe = rpcObserver();
  const fast = {
    readMaxBytes: options.readMaxBytes,
    observe: (
      route: { service: string; method: string },
      code: Code | undefined,
      seconds: number,
    ) => observe(route.service, route.method, code, seconds),
    log: options.log,
  };
  // HTTP/2 streams are taken as they come: a fast-path gRPC call is served on its stream, and
  // only the rest get the request and response objects connect-node reads.
  const onStream = (
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    _flags: number,
    rawHeaders: string[],
  ) => {
    const route = fastRoute(options.fastUnary, headers);
    if (route) serveUnary(route, stream, headers, fast);
    else compatRequest(stream, headers, rawHeaders, connectHandler);
  };

  return {
    health,
    listen(port, host) {
      // gRPC needs HTTP/2 (h2c, prior knowledge); curl and browsers speaking Connect often use
      // HTTP/1.1. One port serves both by looking at the first bytes of each connection.
      const h2 = http2.createServer({ maxSessionMemory: 64 });
      h2.on("stream", onStream);
      const h1 = http.createServer(connectHandler);
      // HTTP/1.1 keep-alive sockets between requests are idle; draining ends them at once and
      // ends busy ones after their current response.
      const idleH1 = new Set<net.Socket>();
      h1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
        idleH1.delete(req.socket);
        res.once("finish", () => {
          if (shutdown.signal.aborted) req.socket.end();
          else idleH1.add(req.socket);
        });
      });
      const sessions = new Set<http2.Http2Session>();
      h2.on("session", (session) => {
        sessions.add(session);
        session.once("close", () => sessions.delete(session));
      });
      const sockets = new Set<net.Socket>();
      // Nagle off: an HTTP/1.1 response written in two segments (head, then body) otherwise waits
      // for the client's delayed ACK, 40 ms on every /mcp and facade request.
      const server = net.createServer({ noDelay: true }, (socket) => {
        sockets.add(socket);
        socket.once("close", () => sockets.delete(socket));
        socket.once("data", (first: Buffer) => {
          socket.pause();
          socket.unshift(first);
          if (first.subarray(0, 3).toString("latin1") === "PRI") {
            // The HTTP/2 session takes over the socket's handle and reads the unshifted bytes first.
            h2.emit("connection", socket);
          } else {
            socket.once("close", () => idleH1.delete(socket));
            h1.emit("connection", socket);
            socket.resume();
          }
        });
      });
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const actual = (server.address() as AddressInfo).port;
          health.setAll(HealthCheckResponse_ServingStatus.SERVING);
          options.log.info({ port: actual, host }, "listening (gRPC, gRPC-Web, Connect)");
          resolve({
            port: actual,
            host,
            url: `http://${host.includes(":") ? `[${host}]` : host}:${actual}`,
            close: (graceMs = 5000) =>
              drain(server, idleH1, sessions, sockets, health, shutdown, graceMs),
          });
        });
      });
    },
  };
}

async function drain(
  server: net.Server,
  idleH1: Set<net.Socket>,
  sessions: Set<http2.Http2Session>,
  sockets: Set<net.Socket>,
  health: HealthState,
  shutdown: AbortController,
  graceMs: number,
): Promise<void> {
  health.setAll(HealthCheckResponse_ServingStatus.NOT_SERVING);
  shutdown.abort();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const session of sessions) session.close();
  for (const socket of idleH1) socket.end();
  const timer = setTimeout(() => {
    for (const socket of sockets) socket.destroy();
  }, graceMs);
  await closed;
  clearTimeout(timer);
}
