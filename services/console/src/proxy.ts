import http from "node:http";
import type { Readable } from "node:stream";
import type { ServiceName } from "@toolmesh/config";
import type { Logger } from "@toolmesh/log";

/** Which service answers each RPC path prefix the browser may call. */
const ROUTES: Record<string, ServiceName> = {
  "/toolmesh.registry.v1.RegistryService/": "registry",
  "/toolmesh.permission.v1.PermissionService/": "permission",
  "/toolmesh.dispatcher.v1.DispatcherService/": "dispatcher",
  "/toolmesh.audit.v1.AuditService/": "audit",
  "/toolmesh.callback.v1.CallbackService/": "callback",
  "/toolmesh.agent.v1.AgentService/": "tool-agent",
};

/** Request headers the Connect protocol needs; nothing else (no cookies) goes upstream. */
const FORWARDED = [
  "authorization",
  "content-type",
  "content-length",
  "content-encoding",
  "accept",
  "accept-encoding",
  "connect-protocol-version",
  "connect-timeout-ms",
  "connect-content-encoding",
  "connect-accept-encoding",
  "traceparent",
];

/** The parts of a Node HTTP/1.1 or HTTP/2 compatibility request and response a proxy uses. */
export interface ProxiedRequest extends Readable {
  url?: string | undefined;
  method?: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}
export interface ProxiedResponse {
  writeHead(status: number, headers: Record<string, string | string[]>): unknown;
  write(chunk: Buffer): unknown;
  end(body?: string): unknown;
  once(event: "close", listener: () => void): unknown;
  readonly writableEnded: boolean;
}

/**
 * Forwards the browser's Connect RPCs to the service that owns them, streaming both ways (live
 * calls are a server stream), so the app needs one origin and no service needs CORS. The
 * browser's own bearer token travels as it came; the console holds no credential.
 */
export function createRpcProxy(urls: Record<ServiceName, string>, log: Logger) {
  return (req: ProxiedRequest, res: ProxiedResponse): boolean => {
    const path = req.url ?? "";
    const prefix = Object.keys(ROUTES).find((p) => path.startsWith(p));
    if (!prefix || req.method !== "POST") return false;
    const target = new URL(path, urls[ROUTES[prefix] as ServiceName]);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED) {
      const value = req.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const upstream = http.request(target, { method: "POST", headers }, (answer) => {
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
      }
      res.writeHead(answer.statusCode ?? 502, out);
      answer.on("data", (chunk: Buffer) => res.write(chunk));
      answer.on("end", () => res.end());
      answer.on("error", () => res.end());
    });
    upstream.on("error", (error) => {
      log.warn({ err: error, service: ROUTES[prefix] }, "service unreachable from the console");
      if (res.writableEnded) return;
      res.writeHead(503, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          code: "unavailable",
          message: `the ${ROUTES[prefix]} service at ${target.origin} is unreachable; is the stack running?`,
        }),
      );
    });
    // A browser that goes away (a closed live page) ends the upstream stream too.
    res.once("close", () => upstream.destroy());
    req.pipe(upstream);
    return true;
  };
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
]);
