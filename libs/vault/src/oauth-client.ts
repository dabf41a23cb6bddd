import { createHash, randomBytes } from "node:crypto";

/** An authorization server's endpoints, given or discovered (RFC 8414). */
export interface OAuthEndpoints {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  revocationEndpoint: string;
  /** Dynamic client registration (RFC 7591); empty when the issuer offers none. */
  registrationEndpoint?: string;
}

/** toolmesh as the client of an upstream. */
export interface OAuthClient {
  clientId: string;
  /** Empty for a public client: PKCE alone. */
  clientSecret: string;
}

/** What a token endpoint gave. */
export interface TokenSet {
  accessToken: string;
  /** Empty when the upstream gave none. */
  refreshToken: string;
  /** Epoch ms the access token expires; 0 when the upstream did not say. */
  expiresAt: number;
  scopes: string[];
}

/**
 * An upstream refused or could not be reached: `error` is the OAuth error code (`invalid_grant`
 * …) or `unreachable`, and the message never holds a token.
 */
export class OAuthError extends Error {
  override name = "OAuthError";
  constructor(
    readonly error: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Upstream requests end after this long: a call waiting for a token has a deadline too. */
export const UPSTREAM_TIMEOUT_MS = 10_000;
/** Metadata and token responses larger than this are not an authorization server's. */
const MAX_RESPONSE_BYTES = 256 * 1024;

/**
 * The issuer's endpoints from its metadata: RFC 8414's well-known path first (inserted before
 * the issuer's path), then OpenID Connect discovery's (appended).
 */
export async function discoverIssuer(issuer: string): Promise<OAuthEndpoints> {
  const base = new URL(issuer);
  const path = base.pathname.replace(/\/+$/, "");
  const candidates = [
    new URL(`/.well-known/oauth-authorization-server${path}`, base.origin).toString(),
    `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`,
  ];
  const problems: string[] = [];
  for (const url of candidates) {
    let metadata: Record<string, unknown>;
    try {
      metadata = await getJson(url);
    } catch (error) {
      problems.push(`${url}: ${(error as Error).message}`);
      continue;
    }
    const authorizationEndpoint = stringOf(metadata.authorization_endpoint);
    const tokenEndpoint = stringOf(metadata.token_endpoint);
    if (!tokenEndpoint) {
      problems.push(`${url}: no token_endpoint`);
      continue;
    }
    return {
      issuer: stringOf(metadata.issuer) || issuer,
      authorizationEndpoint,
      tokenEndpoint,
      revocationEndpoint: stringOf(metadata.revocation_endpoint),
      registrationEndpoint: stringOf(metadata.registration_endpoint),
    };
  }
  throw new OAuthError(
    "discovery_failed",
    `no authorization server metadata: ${problems.join("; ")}`,
  );
}

/** A PKCE pair (RFC 7636, S256): the verifier kept by toolmesh, the challenge sent upstream. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge };
}

/** The upstream's authorization URL for one connection attempt. */
export function authorizationUrl(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  request: {
    redirectUri: string;
    state: string;
    challenge: string;
    scopes: string[];
    resource: string;
  },
): string {
  const url = new URL(endpoints.authorizationEndpoint);
  const params = url.searchParams;
  params.set("response_type", "code");
  params.set("client_id", client.clientId);
  params.set("redirect_uri", request.redirectUri);
  params.set("state", request.state);
  params.set("code_challenge", request.challenge);
  params.set("code_challenge_method", "S256");
  if (request.scopes.length > 0) params.set("scope", request.scopes.join(" "));
  if (request.resource) params.set("resource", request.resource);
  // OpenID providers give a refresh token for offline_access only after consent.
  if (request.scopes.includes("offline_access")) params.set("prompt", "consent");
  return url.toString();
}

/** Trades an authorization code (and its PKCE verifier) for tokens. */
export function exchangeCode(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  request: { code: string; verifier: string; redirectUri: string; resource: string },
): Promise<TokenSet> {
  return tokenRequest(endpoints, client, {
    grant_type: "authorization_code",
    code: request.code,
    code_verifier: request.verifier,
    redirect_uri: request.redirectUri,
    ...(request.resource ? { resource: request.resource } : {}),
  });
}

/** A new access token for a refresh token (the upstream may rotate the refresh token too). */
export function refreshTokens(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  refreshToken: string,
  resource: string,
): Promise<TokenSet> {
  return tokenRequest(endpoints, client, {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    ...(resource ? { resource } : {}),
  });
}

/** RFC 8693: an upstream access token for a subject token (a JWT toolmesh signed). */
export function exchangeToken(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  request: { subjectToken: string; resource: string; scopes: string[] },
): Promise<TokenSet> {
  return tokenRequest(endpoints, client, {
    grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
    subject_token: request.subjectToken,
    subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
    requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
    ...(request.resource ? { resource: request.resource } : {}),
    ...(request.scopes.length > 0 ? { scope: request.scopes.join(" ") } : {}),
  });
}

/** RFC 7009: tells the upstream a token is no longer wanted; errors are the caller's to log. */
export async function revokeToken(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  token: string,
  hint: "refresh_token" | "access_token",
): Promise<void> {
  if (!endpoints.revocationEndpoint) return;
  const response = await post(endpoints.revocationEndpoint, client, {
    token,
    token_type_hint: hint,
  });
  if (!response.ok)
    throw new OAuthError(
      "revocation_failed",
      `the revocation endpoint answered HTTP ${response.status}`,
    );
}

/**
 * What a protected resource says about its authorization (RFC 9728): asked without a token, it
 * answers 401 with `WWW-Authenticate: Bearer resource_metadata="<url>"`; the metadata names its
 * authorization servers. Undefined when the resource does not answer 401 so.
 */
export async function discoverProtectedResource(
  resourceUrl: string,
  unauthorized: Response,
): Promise<{ resource: string; authorizationServers: string[]; scopes: string[] } | undefined> {
  if (unauthorized.status !== 401) return undefined;
  const challenge = unauthorized.headers.get("www-authenticate") ?? "";
  const match = /resource_metadata="([^"]+)"/i.exec(challenge);
  const metadataUrl = match?.[1]
    ? new URL(match[1], resourceUrl).toString()
    : new URL("/.well-known/oauth-protected-resource", resourceUrl).toString();
  let metadata: Record<string, unknown>;
  try {
    metadata = await getJson(metadataUrl);
  } catch {
    return undefined;
  }
  const servers = Array.isArray(metadata.authorization_servers)
    ? metadata.authorization_servers.filter((s): s is string => typeof s === "string")
    : [];
  if (servers.length === 0) return undefined;
  const scopes = Array.isArray(metadata.scopes_supported)
    ? metadata.scopes_supported.filter((s): s is string => typeof s === "string")
    : [];
  return {
    resource: stringOf(metadata.resource) || resourceUrl,
    authorizationServers: servers,
    scopes,
  };
}

/**
 * Registers toolmesh as a confidential client of an authorization server (RFC 7591 dynamic
 * client registration): the authorization code flow with refresh tokens, back to `redirectUri`.
 */
export async function registerClient(
  registrationEndpoint: string,
  client: { name: string; redirectUri: string; scopes: string[] },
): Promise<OAuthClient> {
  let response: Response;
  try {
    response = await fetch(registrationEndpoint, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({
        client_name: client.name,
        redirect_uris: [client.redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        ...(client.scopes.length > 0 ? { scope: client.scopes.join(" ") } : {}),
      }),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch (error) {
    throw new OAuthError(
      "unreachable",
      `cannot reach ${new URL(registrationEndpoint).host}: ${causeOf(error)}`,
    );
  }
  const body = await readJson(response);
  const clientId = stringOf(body.client_id);
  if (!response.ok || clientId === "")
    throw new OAuthError(
      stringOf(body.error) || "registration_failed",
      `dynamic client registration at ${registrationEndpoint} answered HTTP ${response.status}${body.error_description ? `: ${stringOf(body.error_description)}` : ""}`,
    );
  return { clientId, clientSecret: stringOf(body.client_secret) };
}

async function tokenRequest(
  endpoints: OAuthEndpoints,
  client: OAuthClient,
  form: Record<string, string>,
): Promise<TokenSet> {
  const response = await post(endpoints.tokenEndpoint, client, form);
  const body = await readJson(response);
  if (!response.ok) {
    const error = stringOf(body.error) || "token_request_failed";
    const description = stringOf(body.error_description);
    throw new OAuthError(
      error,
      `the token endpoint refused the ${form.grant_type} grant (HTTP ${response.status} ${error}${description ? `: ${description.slice(0, 200)}` : ""})`,
    );
  }
  const accessToken = stringOf(body.access_token);
  if (!accessToken)
    throw new OAuthError("invalid_response", "the token endpoint answered without an access_token");
  const expiresIn = typeof body.expires_in === "number" ? body.expires_in : 0;
  return {
    accessToken,
    refreshToken: stringOf(body.refresh_token),
    expiresAt: expiresIn > 0 ? Date.now() + expiresIn * 1000 : 0,
    scopes: stringOf(body.scope).split(" ").filter(Boolean),
  };
}

async function post(
  url: string,
  client: OAuthClient,
  form: Record<string, string>,
): Promise<Response> {
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  const body = new URLSearchParams(form);
  if (client.clientSecret) {
    // RFC 6749 2.3.1: both parts form-encoded before Basic.
    const basic = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(basic).toString("base64")}`;
  } else {
    body.set("client_id", client.clientId);
  }
  try {
    return await fetch(url, {
      method: "POST",
      headers,
      body,
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch (error) {
    throw new OAuthError("unreachable", `cannot reach ${new URL(url).host}: ${causeOf(error)}`, {
      cause: error,
    });
  }
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch (error) {
    throw new OAuthError("unreachable", `cannot reach ${new URL(url).host}: ${causeOf(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new OAuthError("discovery_failed", `HTTP ${response.status}`);
  }
  return readJson(response);
}

async function readJson(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  if (text.length > MAX_RESPONSE_BYTES)
    throw new OAuthError("invalid_response", `a response of ${text.length} bytes is too large`);
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function stringOf(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}
