import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import type { HttpHandler } from "@toolmesh/server";
import type { OAuthConnections } from "./oauth-connections.js";
import type { SigningKeys } from "./signing-keys.js";

/** The parts of an HTTP/1.1 or HTTP/2 compatibility response these routes write. */
interface Response {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body?: string): unknown;
}

/**
 * Permission's browser routes beside its RPCs: `GET /oauth/connect?ticket=` (a connect link,
 * redirected to the upstream's authorization page), `GET /oauth/callback?code&state` (the
 * upstream's redirect back: the code traded for tokens, sealed in the vault) and
 * `GET /.well-known/jwks.json` (the public halves of toolmesh's signing keys, for upstreams that
 * verify the subject tokens of a token exchange). Pages never show a token or a code.
 */
export function connectRoutes(deps: {
  connections: OAuthConnections;
  signing: SigningKeys;
  log: Logger;
}): HttpHandler {
  return (req, response) => {
    const res = response as unknown as Response;
    const url = new URL(req.url ?? "/", "http://permission");
    req.resume();
    if (req.method !== "GET") return page(res, 404, "Not found", "");
    switch (url.pathname) {
      case "/.well-known/jwks.json":
        res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=60" });
        res.end(JSON.stringify(deps.signing.jwks()));
        return;
      case "/oauth/connect":
        deps.connections.begin(url.searchParams.get("ticket") ?? "").then(
          (location) => {
            res.writeHead(302, { location, "cache-control": "no-store" });
            res.end();
          },
          (error: unknown) => failed(res, error, deps.log),
        );
        return;
      case "/oauth/callback": {
        const upstreamError = url.searchParams.get("error");
        if (upstreamError)
          return page(
            res,
            400,
            "Not connected",
            `The account was not connected: the provider answered ${escapeHtml(upstreamError.slice(0, 100))}. Start again from the link.`,
          );
        deps.connections
          .complete(url.searchParams.get("state") ?? "", url.searchParams.get("code") ?? "")
          .then(
            (connection) => {
              deps.log.info({ provider: connection.provider }, "account connected");
              page(
                res,
                200,
                "Connected",
                `Your account of ${escapeHtml(connection.provider)} is connected to toolmesh for user ${escapeHtml(connection.userId)}. You can close this page.`,
              );
            },
            (error: unknown) => failed(res, error, deps.log),
          );
        return;
      }
      default:
        page(res, 404, "Not found", "");
    }
  };
}

function failed(res: Response, error: unknown, log: Logger): void {
  if (error instanceof ConnectError) {
    const status = error.code === Code.Unavailable ? 502 : error.code === Code.NotFound ? 404 : 400;
    page(res, status, "Not connected", escapeHtml(error.rawMessage));
    return;
  }
  log.error({ err_name: (error as Error)?.name }, "connect route failed");
  page(res, 500, "Not connected", "Something went wrong; see Permission's log.");
}

function page(res: Response, status: number, title: string, text: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'",
  });
  res.end(`<!doctype html><title>toolmesh: ${title}</title><h1>${title}</h1><p>${text}</p>\n`);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
