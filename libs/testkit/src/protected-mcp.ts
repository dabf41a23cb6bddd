import { createServer, request, type Server } from "node:http";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { listenLocal } from "./listen-local.js";

/** An MCP server behind a resource server that takes only the authorization server's tokens. */
export interface ProtectedMcp {
  /** The protected MCP endpoint (`/mcp`): the resource its tokens are for. */
  url: string;
  /** Each accepted request's token subject, in order. */
  seen: string[];
  /** Each accepted request's body, in order: what reached the server under those tokens. */
  bodies: string[];
  stop(): Promise<void>;
}

/**
 * Puts an MCP server over HTTP (`target`, its endpoint URL) behind OAuth as the MCP authorization
 * spec has it: a request without a valid access token for this resource (a JWT of `issuer()`)
 * is answered 401 with `WWW-Authenticate: Bearer resource_metadata="…"`, and the
 * protected-resource metadata (RFC 9728) names the authorization server and its scopes; a valid
 * one is forwarded to the server as it came, without the token.
 */
export async function startProtectedMcp(
  target: string,
  issuer: () => string,
  scopes: string[],
): Promise<ProtectedMcp> {
  const seen: string[] = [];
  const bodies: string[] = [];
  let keys: ReturnType<typeof createRemoteJWKSet> | undefined;
  let url = "";
  let base = "";
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url?.startsWith("/.well-known/oauth-protected-resource")) {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          resource: url,
          authorization_servers: [issuer()],
          scopes_supported: scopes,
          bearer_methods_supported: ["header"],
        }),
      );
      return;
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    keys ??= createRemoteJWKSet(new URL(`${issuer()}/jwks`));
    jwtVerify(token, keys, { issuer: issuer(), audience: url }).then(
      ({ payload }) => {
        seen.push(String(payload.sub));
        const { authorization: _, host: __, ...headers } = req.headers;
        const forwarded = request(
          {
            host: upstream.hostname,
            port: upstream.port,
            path: upstream.pathname,
            method: req.method,
            headers,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forwarded.on("error", () => res.destroy());
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => {
          const body = Buffer.concat(chunks);
          bodies.push(body.toString("utf8"));
          forwarded.end(body);
        });
      },
      () => {
        req.resume();
        res.writeHead(401, {
          "content-type": "application/json",
          "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
        });
        res.end(JSON.stringify({ error: "invalid_token" }));
      },
    );
  });
  const listening = await listenLocal(server);
  base = `http://127.0.0.1:${listening.port}`;
  url = `${base}/mcp`;
  return { url, seen, bodies, stop: listening.stop };
}
