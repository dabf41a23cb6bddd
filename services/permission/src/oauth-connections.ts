import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import { type OAuthConnection, OAuthConnectionSchema, type OAuthProvider } from "@toolmesh/proto";
import {
  authorizationUrl,
  connectionId,
  exchangeCode,
  exchangeToken,
  notConnectedMessage,
  type OAuthClient,
  type OAuthEndpoints,
  OAuthError,
  pkcePair,
  refreshTokens,
  revokeToken,
  type TokenSet,
  VaultSealError,
} from "@toolmesh/vault";
import { PendingAuthorizations } from "./oauth-pending.js";
import { decodeTokens, encodeTokens, refreshOnce } from "./oauth-refresh.js";
import type { SigningKeys } from "./signing-keys.js";
import type { VaultIndex } from "./store.js";
import type { Vault } from "./vault-store.js";

/** What a call's OAuth need resolves to. */
export interface AccessToken {
  value: string;
  /** `connection:<id>` or `exchange:<provider>`: what the Dispatcher's cache is keyed on. */
  source: string;
  version: bigint;
  /** Epoch ms; 0 when the upstream did not say. */
  expiresAt: number;
}

export interface OAuthConnectionsDeps {
  index: VaultIndex;
  vault: Vault;
  signing: SigningKeys;
  log: Logger;
  /** Where browsers reach Permission (links, the redirect URI). */
  publicUrl: () => string;
  /** An access token is refreshed once it expires within this long. */
  refreshMarginMs: number;
  linkTtlMs: number;
  /** The issuer toolmesh's own tokens name (subject tokens of a token exchange). */
  issuer: string;
  now?: () => number;
}

/** What the connect link carries, sealed: only Permission can make or read one. */
interface Ticket {
  p: string;
  u: string;
  exp: number;
}

const TICKET_AAD = "connect-ticket";

/**
 * Users' connections to OAuth upstreams, toolmesh as the client: the connect link, the
 * authorization code flow with PKCE, tokens sealed in the vault per user and refreshed before
 * they expire, RFC 8693 token exchange where the upstream does it, and revocation.
 */
export class OAuthConnections {
  private readonly refreshing = new Map<string, Promise<AccessToken>>();
  private readonly exchanged = new Map<string, AccessToken>();
  private readonly now: () => number;
  /** This replica, as the leases on tokens it refreshes name it. */
  private readonly holder = randomBytes(6).toString("hex");
  /** Authorizations under way (`pending.<state>`), swept once they expire. */
  readonly pending: PendingAuthorizations;

  constructor(private readonly deps: OAuthConnectionsDeps) {
    this.now = deps.now ?? Date.now;
    this.pending = new PendingAuthorizations(deps.vault, this.now);
  }

  /** The redirect URI to register at every upstream. */
  redirectUri(): string {
    return `${this.deps.publicUrl()}/oauth/callback`;
  }

  /** The provider, or NOT_FOUND naming how to list them. */
  provider(name: string): OAuthProvider & { spec: NonNullable<OAuthProvider["spec"]> } {
    const provider = this.deps.index.providers.get(buckets.permission.oauthProviderKey(name));
    if (!provider?.spec)
      throw new ConnectError(
        `OAuth provider "${name}" does not exist; list them with ListOAuthProviders`,
        Code.NotFound,
      );
    return provider as OAuthProvider & { spec: NonNullable<OAuthProvider["spec"]> };
  }

  /** The link that connects a user's account of a provider: sealed, short-lived. */
  connectLink(provider: string, user: string): { url: string; expiresAt: number } {
    this.provider(provider);
    const exp = this.now() + this.deps.linkTtlMs;
    const ticket: Ticket = { p: provider, u: user, exp };
    const sealed = this.deps.vault.cipher.seal(
      new TextEncoder().encode(JSON.stringify(ticket)),
      TICKET_AAD,
    );
    const url = `${this.deps.publicUrl()}/oauth/connect?ticket=${Buffer.from(sealed).toString("base64url")}`;
    return { url, expiresAt: exp };
  }

  /** GET /oauth/connect: the upstream's authorization URL for a valid ticket. */
  async begin(ticketText: string): Promise<string> {
    let ticket: Ticket;
    try {
      const plain = this.deps.vault.cipher.open(Buffer.from(ticketText, "base64url"), TICKET_AAD);
      ticket = JSON.parse(new TextDecoder().decode(plain)) as Ticket;
    } catch (error) {
      if (error instanceof VaultSealError || error instanceof SyntaxError)
        throw new ConnectError(
          "this link is not one toolmesh made; ask for a new one",
          Code.InvalidArgument,
        );
      throw error;
    }
    if (ticket.exp <= this.now())
      throw new ConnectError(
        "this link has expired; ask for a new one (call the tool again, or ConnectAccount)",
        Code.FailedPrecondition,
      );
    const provider = this.provider(ticket.p);
    const { verifier, challenge } = pkcePair();
    // The person gets as long to sign in upstream as the link had, from when they open it.
    const state = await this.pending.open({
      provider: ticket.p,
      user: ticket.u,
      verifier,
      exp: this.now() + this.deps.linkTtlMs,
    });
    return authorizationUrl(
      endpointsOf(provider),
      { clientId: provider.spec.clientId, clientSecret: "" },
      {
        redirectUri: this.redirectUri(),
        state,
        challenge,
        scopes: provider.spec.scopes,
        resource: provider.spec.resource,
      },
    );
  }

  /** GET /oauth/callback: trades the code for tokens and stores them for the user. */
  async complete(state: string, code: string): Promise<OAuthConnection> {
    const pending = await this.pending.take(state);
    if (!pending)
      throw new ConnectError(
        "this authorization is unknown, already used or expired; start again from the link",
        Code.FailedPrecondition,
      );
    if (pending.exp <= this.now())
      throw new ConnectError(
        "this authorization took too long; start again from a new link",
        Code.FailedPrecondition,
      );
    const provider = this.provider(pending.provider);
    const tokens = await this.upstream(
      async () =>
        exchangeCode(endpointsOf(provider), await this.clientOfAsync(provider), {
          code,
          verifier: pending.verifier,
          redirectUri: this.redirectUri(),
          resource: provider.spec.resource,
        }),
      provider.spec.name,
    );
    await this.deps.vault.write(
      buckets.vault.tokensKey(connectionId(pending.provider, pending.user)),
      encodeTokens(tokens),
    );
    return this.record(pending.provider, pending.user, tokens, true);
  }

  /** The access token a call of `user` needs, refreshed first when it expires soon. */
  async accessToken(providerName: string, user: string, agent: string): Promise<AccessToken> {
    const provider = this.provider(providerName);
    if (provider.spec.tokenExchange) return this.exchange(provider, user, agent);
    if (user === "")
      throw new ConnectError(
        `the tool needs a user's account of OAuth provider "${providerName}", and the call acts for no user: call with a token that acts for a user`,
        Code.FailedPrecondition,
      );
    const id = connectionId(providerName, user);
    const connection = this.deps.index.connections.get(buckets.permission.connectionKey(id));
    if (!connection) throw this.notConnected(providerName, user);
    const stored = await this.deps.vault.read(buckets.vault.tokensKey(id));
    if (!stored) throw this.notConnected(providerName, user);
    const tokens = decodeTokens(stored);
    if (this.fresh(tokens))
      return {
        value: tokens.accessToken,
        source: `connection:${id}`,
        version: connection.version,
        expiresAt: tokens.expiresAt,
      };
    let refresh = this.refreshing.get(id);
    if (!refresh) {
      refresh = this.refresh(provider, user).finally(() => this.refreshing.delete(id));
      this.refreshing.set(id, refresh);
    }
    return refresh;
  }

  /** Forgets a user's tokens (revoking them upstream first when it can); false when none. */
  async revoke(providerName: string, user: string): Promise<boolean> {
    const id = connectionId(providerName, user);
    const key = buckets.permission.connectionKey(id);
    const connection = this.deps.index.connections.get(key);
    const plain = await this.deps.vault.read(buckets.vault.tokensKey(id));
    // The index first: the next call is refused whatever happens upstream.
    const deleted = await this.deps.index.delete("connections", key);
    await this.deps.vault.remove(buckets.vault.tokensKey(id));
    const provider = this.deps.index.providers.get(
      buckets.permission.oauthProviderKey(providerName),
    );
    if (plain && provider?.spec) {
      const tokens = decodeTokens(plain);
      const client = await this.clientOfAsync(provider);
      for (const [token, hint] of [
        [tokens.refreshToken, "refresh_token"],
        [tokens.accessToken, "access_token"],
      ] as const) {
        if (!token) continue;
        await revokeToken(endpointsOf(provider), client, token, hint).catch((error: unknown) =>
          this.deps.log.warn(
            { provider: providerName, err_code: (error as OAuthError).error },
            "the upstream did not revoke a token; it is forgotten here all the same",
          ),
        );
      }
    }
    return deleted || connection !== undefined;
  }

  /** Every connection of a provider goes (the provider is deleted). */
  async forgetProvider(providerName: string): Promise<void> {
    for (const connection of [...this.deps.index.connections.values()]) {
      if (connection.provider === providerName) await this.revoke(providerName, connection.userId);
    }
  }

  private notConnected(provider: string, user: string): ConnectError {
    const link = this.connectLink(provider, user);
    return new ConnectError(notConnectedMessage(provider, user, link.url), Code.FailedPrecondition);
  }

  /** Whether tokens can be used as they are: they do not expire within the refresh margin. */
  private fresh(tokens: TokenSet): boolean {
    return tokens.expiresAt === 0 || tokens.expiresAt - this.deps.refreshMarginMs > this.now();
  }

  /** New tokens for the user, refreshed once across the replicas (oauth-refresh.ts). */
  private async refresh(
    provider: OAuthProvider & { spec: NonNullable<OAuthProvider["spec"]> },
    user: string,
  ): Promise<AccessToken> {
    const name = provider.spec.name;
    const id = connectionId(name, user);
    let result: Awaited<ReturnType<typeof refreshOnce>>;
    try {
      result = await refreshOnce({
        vault: this.deps.vault,
        key: buckets.vault.tokensKey(id),
        holder: this.holder,
        now: this.now,
        log: this.deps.log.child({ provider: name }),
        fresh: (tokens) => this.fresh(tokens),
        refresh: async (tokens) => {
          if (!tokens.refreshToken) throw this.notConnected(name, user);
          return refreshTokens(
            endpointsOf(provider),
            await this.clientOfAsync(provider),
            tokens.refreshToken,
            provider.spec.resource,
          );
        },
      });
    } catch (error) {
      if (error instanceof OAuthError && error.error === "invalid_grant") {
        // The upstream no longer honours the refresh token: the user must connect again.
        this.deps.log.warn(
          { provider: name },
          "refresh token refused upstream; the connection is dropped",
        );
        await this.revoke(name, user);
        throw this.notConnected(name, user);
      }
      throw upstreamError(error, name);
    }
    if (!result) throw this.notConnected(name, user);
    const { tokens, refreshed } = result;
    let version = this.deps.index.connections.get(buckets.permission.connectionKey(id))?.version;
    if (refreshed) {
      version = (await this.record(name, user, tokens, false)).version;
      this.deps.log.info(
        { provider: name, version: String(version) },
        "access token refreshed before it expired",
      );
    }
    return {
      value: tokens.accessToken,
      source: `connection:${id}`,
      version: version ?? 0n,
      expiresAt: tokens.expiresAt,
    };
  }

  private async exchange(
    provider: OAuthProvider & { spec: NonNullable<OAuthProvider["spec"]> },
    user: string,
    agent: string,
  ): Promise<AccessToken> {
    const name = provider.spec.name;
    if (user === "")
      throw new ConnectError(
        `OAuth provider "${name}" exchanges the caller's user identity for a token, and the call acts for no user: call with a token that acts for a user`,
        Code.FailedPrecondition,
      );
    const cacheKey = JSON.stringify([name, user, agent]);
    const cached = this.exchanged.get(cacheKey);
    if (
      cached &&
      (cached.expiresAt === 0 || cached.expiresAt - this.deps.refreshMarginMs > this.now())
    )
      return cached;
    const endpoints = endpointsOf(provider);
    const subject = await this.deps.signing.sign(
      { sub: user, act: { sub: agent } },
      { issuer: this.deps.issuer, audience: endpoints.issuer, ttlSeconds: 60 },
    );
    const tokens = await this.upstream(
      async () =>
        exchangeToken(endpoints, await this.clientOfAsync(provider), {
          subjectToken: subject.token,
          resource: provider.spec.resource,
          scopes: provider.spec.scopes,
        }),
      name,
    );
    const token: AccessToken = {
      value: tokens.accessToken,
      source: `exchange:${name}`,
      version: BigInt(this.now()),
      expiresAt: tokens.expiresAt,
    };
    if (this.exchanged.size > 10_000) this.exchanged.clear();
    this.exchanged.set(cacheKey, token);
    return token;
  }

  /** Writes the connection's index entry for tokens stored in the vault, its version bumped. */
  private async record(
    provider: string,
    user: string,
    tokens: TokenSet,
    connected: boolean,
  ): Promise<OAuthConnection> {
    const id = connectionId(provider, user);
    const key = buckets.permission.connectionKey(id);
    const before = this.deps.index.connections.get(key);
    const nowMs = this.now();
    const connection = create(OAuthConnectionSchema, {
      provider,
      userId: user,
      version: (before?.version ?? 0n) + 1n,
      connectedAt: connected || !before?.connectedAt ? timestampFromMs(nowMs) : before.connectedAt,
      ...(tokens.expiresAt ? { accessExpiresAt: timestampFromMs(tokens.expiresAt) } : {}),
      ...(connected ? {} : { refreshedAt: timestampFromMs(nowMs) }),
      scopes: tokens.scopes,
      hasRefreshToken: tokens.refreshToken !== "",
    });
    await this.deps.index.put("connections", key, connection);
    return connection;
  }

  /** The client with its secret from the vault (a public client has none). */
  private async clientOfAsync(provider: OAuthProvider): Promise<OAuthClient> {
    const name = provider.spec?.name ?? "";
    const secret = provider.hasClientSecret
      ? await this.deps.vault.read(buckets.vault.clientSecretKey(name))
      : undefined;
    return {
      clientId: provider.spec?.clientId ?? "",
      clientSecret: secret ? new TextDecoder().decode(secret) : "",
    };
  }

  private async upstream(request: () => Promise<TokenSet>, provider: string): Promise<TokenSet> {
    try {
      return await request();
    } catch (error) {
      throw upstreamError(error, provider);
    }
  }
}

/** A provider's endpoints as stored (discovered when it was put). */
export function endpointsOf(provider: OAuthProvider): OAuthEndpoints {
  const spec = provider.spec;
  return {
    issuer: spec?.issuer ?? "",
    authorizationEndpoint: spec?.authorizationEndpoint ?? "",
    tokenEndpoint: spec?.tokenEndpoint ?? "",
    revocationEndpoint: spec?.revocationEndpoint ?? "",
  };
}

/** An upstream's refusal as the caller sees it: UNAVAILABLE when unreachable, else FAILED_PRECONDITION. */
function upstreamError(error: unknown, provider: string): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof OAuthError)
    return new ConnectError(
      `OAuth provider "${provider}": ${error.message}`,
      error.error === "unreachable" ? Code.Unavailable : Code.FailedPrecondition,
    );
  return new ConnectError(
    `OAuth provider "${provider}" failed: ${String((error as Error)?.message ?? error)}`,
    Code.Internal,
  );
}

/** Epoch ms of a connection's access expiry, 0 for none. */
export function accessExpiry(connection: OAuthConnection): number {
  return connection.accessExpiresAt ? timestampMs(connection.accessExpiresAt) : 0;
}
