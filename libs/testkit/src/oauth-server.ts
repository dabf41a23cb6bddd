import { createServer, type Server } from "node:http";
import { freePort } from "@toolmesh/launcher";
import { createRemoteJWKSet, jwtVerify } from "jose";
import Provider, { errors } from "oidc-provider";
import { listenLocal } from "./listen-local.js";

/** A real OAuth 2.1 / OpenID authorization server (oidc-provider) for a test, on a free port. */
export interface TestOAuthServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Grants the server made, by grant type, in order. */
  grants: string[];
  /** Grants it revoked (RFC 7009: a refresh token's revocation revokes its grant), by id. */
  revoked: string[];
  /** Token exchanges it answered: the subject token's user and the agent acting for them. */
  exchanged: { sub: string; act: string }[];
  /** Every access, refresh and ID token its token endpoint answered with, in order. */
  issued: string[];
  stop(): Promise<void>;
}

/** RFC 8693's grant type, as a token request names it. */
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";

/**
 * oidc-provider as the upstream toolmesh is a client of: one confidential client (toolmesh) with
 * the redirect URI given, PKCE required, refresh tokens, revocation, and access tokens for one
 * resource (RFC 8707) as JWTs that live `accessTokenTtlS`. Its development login and consent
 * pages stand in for a person (connectAs drives them). Optionally it rotates refresh tokens (one
 * used twice revokes its grant, as oidc-provider does), holds each refresh's answer back a while,
 * and exchanges tokens (RFC 8693, added through registerGrantType) whose subject is a JWT that
 * toolmesh signed, verified against toolmesh's JWKS.
 */
export async function startOAuthServer(options: {
  redirectUri: string;
  resource: string;
  accessTokenTtlS: number;
  rotateRefreshTokens?: boolean;
  /** How long each refresh_token grant's answer is held back after it is issued. */
  refreshDelayMs?: number;
  /** Subject tokens of a token exchange: their issuer and where its public keys are. */
  tokenExchange?: { issuer: string; jwksUri: string };
  /** Open dynamic client registration (RFC 7591) at /reg. */
  registration?: boolean;
}): Promise<TestOAuthServer> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = "toolmesh";
  const clientSecret = `client-secret-${Math.random().toString(36).slice(2)}`;
  // The one resource: its access tokens are JWTs with it as their audience.
  const resourceInfo = {
    scope: "tools",
    audience: options.resource,
    accessTokenTTL: options.accessTokenTtlS,
    accessTokenFormat: "jwt",
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: [
          "authorization_code",
          "refresh_token",
          ...(options.tokenExchange ? [TOKEN_EXCHANGE] : []),
        ],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    pkce: { required: () => true },
    scopes: ["openid", "offline_access", "tools"],
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({ sub: id }),
    }),
    issueRefreshToken: async () => true,
    rotateRefreshToken: options.rotateRefreshTokens ?? false,
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: options.registration ?? false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => resourceInfo,
      },
    },
    cookies: { keys: ["toolmesh-test-cookies"] },
  } as ConstructorParameters<typeof Provider>[1]);
  const grants: string[] = [];
  const revoked: string[] = [];
  const exchanged: { sub: string; act: string }[] = [];
  const issued: string[] = [];
  if (options.tokenExchange) {
    const { issuer: subjectIssuer, jwksUri } = options.tokenExchange;
    const toolmeshKeys = createRemoteJWKSet(new URL(jwksUri));
    // The extension point oidc-provider documents for grants it does not implement itself.
    provider.registerGrantType(
      TOKEN_EXCHANGE,
      async (ctx: ExchangeContext) => {
        const params = ctx.oidc.params;
        if (params.subject_token_type !== "urn:ietf:params:oauth:token-type:jwt")
          throw new errors.InvalidRequest("subject_token_type must be a JWT");
        let subject: { sub?: string; act?: { sub?: string } };
        try {
          ({ payload: subject } = await jwtVerify(params.subject_token ?? "", toolmeshKeys, {
            issuer: subjectIssuer,
            audience: issuer,
          }));
        } catch (error) {
          throw new errors.InvalidGrant(`subject_token: ${(error as Error).message}`);
        }
        const token = new provider.AccessToken({
          accountId: String(subject.sub),
          client: ctx.oidc.client,
          gty: "token-exchange",
          scope: "tools",
        });
        token.resourceServer = new provider.ResourceServer(options.resource, resourceInfo);
        exchanged.push({ sub: String(subject.sub), act: String(subject.act?.sub ?? "") });
        ctx.body = {
          access_token: await token.save(),
          issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
          token_type: "Bearer",
          expires_in: token.expiration,
          scope: "tools",
        };
      },
      ["subject_token", "subject_token_type", "requested_token_type", "resource", "scope"],
      ["resource"],
    );
  }
  const refreshDelayMs = options.refreshDelayMs ?? 0;
  if (refreshDelayMs > 0)
    provider.use(async (ctx: ExchangeContext, next: () => Promise<void>) => {
      await next();
      if (ctx.oidc?.params?.grant_type === "refresh_token")
        await new Promise((resolve) => setTimeout(resolve, refreshDelayMs));
    });
  // Every token the token endpoint answered with, for tests that search stores for them.
  provider.use(async (ctx: TokenContext, next: () => Promise<void>) => {
    await next();
    if (ctx.oidc?.route !== "token" || typeof ctx.body !== "object" || ctx.body === null) return;
    for (const field of ["access_token", "refresh_token", "id_token"] as const) {
      const token = (ctx.body as Record<string, unknown>)[field];
      if (typeof token === "string" && token !== "") issued.push(token);
    }
  });
  provider.on("grant.success", (ctx: { oidc: { params?: { grant_type?: string } } }) => {
    grants.push(String(ctx.oidc.params?.grant_type ?? ""));
  });
  // Revoking a refresh token revokes its grant (RFC 7009 at the revocation endpoint).
  provider.on("grant.revoked", (_ctx: unknown, grantId: string) => {
    revoked.push(String(grantId));
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    clientId,
    clientSecret,
    grants,
    revoked,
    exchanged,
    issued,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What the grant handler and the middleware read of oidc-provider's context. */
interface ExchangeContext {
  oidc: { params: Record<string, string | undefined>; client: unknown };
  body: unknown;
}

/** What the token capture reads: the route oidc-provider matched and the answer it made. */
interface TokenContext {
  oidc?: { route?: string };
  body: unknown;
}

/**
 * Plays the person who opens a connect link: follows it to the authorization server, signs in as
 * `account` and consents on its development pages, and follows the redirect back to toolmesh;
 * returns toolmesh's last page (status and text).
 */
export async function connectAs(
  link: string,
  account: string,
): Promise<{ status: number; text: string }> {
  const cookies = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair?.indexOf("=") ?? -1;
      if (pair && at > 0) cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return response;
  };
  let url = link;
  for (let hop = 0; hop < 20; hop++) {
    const response = await send(url);
    const location = response.headers.get("location");
    if (location) {
      await response.body?.cancel();
      url = new URL(location, url).toString();
      continue;
    }
    const text = await response.text();
    const form = /<form[^>]*action="([^"]+)"/.exec(text);
    if (!form?.[1] || !url.includes("/interaction/")) return { status: response.status, text };
    const prompt = text.includes('name="login"') ? "login" : "consent";
    const body = new URLSearchParams(
      prompt === "login" ? { prompt, login: account, password: "any" } : { prompt },
    );
    const submitted = await send(new URL(form[1], url).toString(), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    await submitted.body?.cancel();
    const next = submitted.headers.get("location");
    if (!next)
      throw new Error(`the ${prompt} page answered ${submitted.status} without a redirect`);
    url = new URL(next, url).toString();
  }
  throw new Error("more than 20 redirects connecting an account");
}

/** A tool protected by the authorization server: it checks the bearer JWT and says whose it is. */
export interface ProtectedTool {
  url: string;
  /** Each call's token subject, expiry (epoch s) and when it arrived (epoch ms). */
  seen: { sub: string; exp: number; at: number; token: string }[];
  stop(): Promise<void>;
}

/** Starts a remote tool that answers only requests with a valid access token for `resource`. */
export async function startProtectedTool(issuer: () => string): Promise<ProtectedTool> {
  const seen: ProtectedTool["seen"] = [];
  let keys: ReturnType<typeof createRemoteJWKSet> | undefined;
  let url = "";
  const server = createServer((req, res) => {
    req.resume();
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    keys ??= createRemoteJWKSet(new URL(`${issuer()}/jwks`));
    jwtVerify(token, keys, { issuer: issuer(), audience: url }).then(
      ({ payload }) => {
        seen.push({ sub: String(payload.sub), exp: Number(payload.exp), at: Date.now(), token });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ user: payload.sub }));
      },
      (error: unknown) => {
        res.writeHead(401, {
          "content-type": "application/json",
          "www-authenticate": `Bearer error="invalid_token"`,
        });
        res.end(JSON.stringify({ error: String((error as Error).message) }));
      },
    );
  });
  const listening = await listenLocal(server);
  url = `http://127.0.0.1:${listening.port}/whoami`;
  return { url, seen, stop: listening.stop };
}
