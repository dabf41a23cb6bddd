import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { hasRole, principalOf, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { checkPrincipalId } from "@toolmesh/names";
import { buckets } from "@toolmesh/nats";
import {
  ChangeType,
  ConnectAccountResponseSchema,
  DeleteOAuthProviderResponseSchema,
  ListConnectionsResponseSchema,
  ListOAuthProvidersResponseSchema,
  OAuthProviderSchema,
  type OAuthProviderSpec,
  type PermissionService,
  PutOAuthProviderResponseSchema,
  RevokeConnectionResponseSchema,
} from "@toolmesh/proto";
import { discoverIssuer, OAuthError, registerClient } from "@toolmesh/vault";
import type { PermissionEvents } from "./events.js";
import type { OAuthConnections } from "./oauth-connections.js";
import type { VaultIndex } from "./store.js";
import { checkDescription } from "./validation.js";
import type { Vault } from "./vault-store.js";
import { checkVaultName, userOf } from "./vault-validation.js";

/** An OAuth scope token (RFC 6749, 3.3), bounded. */
const OAUTH_SCOPE = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

type OAuthRpcs = Pick<
  ServiceImpl<typeof PermissionService>,
  | "putOAuthProvider"
  | "deleteOAuthProvider"
  | "listOAuthProviders"
  | "connectAccount"
  | "listConnections"
  | "revokeConnection"
>;

export interface OAuthDeps {
  index: VaultIndex;
  vault: Vault;
  connections: OAuthConnections;
  events: PermissionEvents;
  log: Logger;
  now?: () => number;
}

/** Upstreams (admin) and users' connections to them (the user, or an admin for anyone). */
export function createOAuthHandlers(deps: OAuthDeps): OAuthRpcs {
  const { index, vault, connections, events } = deps;
  const now = deps.now ?? Date.now;
  const admin = (ctx: HandlerContext) => requireRole(ctx, Role.Admin);

  return {
    async putOAuthProvider(req, ctx) {
      const caller = admin(ctx);
      const { spec, registrationEndpoint } = await completeSpec(req.provider);
      let clientSecret = req.clientSecret;
      if (spec.clientId === "") {
        if (clientSecret !== "")
          throw invalidField(
            "client_secret",
            "is given without provider.client_id: give both, or neither to have toolmesh register itself (RFC 7591)",
          );
        const registered = await registerDynamically(
          spec,
          registrationEndpoint,
          connections.redirectUri(),
        );
        spec.clientId = registered.clientId;
        clientSecret = registered.clientSecret;
      }
      const key = buckets.permission.oauthProviderKey(spec.name);
      const existing = index.providers.get(key);
      const secretKey = buckets.vault.clientSecretKey(spec.name);
      let hasClientSecret = existing?.hasClientSecret ?? false;
      if (clientSecret !== "") {
        if (clientSecret.length > 4096)
          throw invalidField("client_secret", "is longer than 4096 characters");
        await vault.write(secretKey, new TextEncoder().encode(clientSecret));
        hasClientSecret = true;
      } else if (req.clearClientSecret) {
        await vault.remove(secretKey);
        hasClientSecret = false;
      }
      const provider = create(OAuthProviderSchema, {
        spec,
        redirectUri: connections.redirectUri(),
        hasClientSecret,
        updatedBy: caller.agentId,
        updatedAt: timestampFromMs(now()),
      });
      await index.put("providers", key, provider);
      deps.log.info(
        { provider: spec.name, issuer: spec.issuer, by: caller.agentId },
        "OAuth provider put",
      );
      await events.publish(caller, {
        kind: "oauth_provider",
        id: spec.name,
        type: ChangeType.PUT,
        reason: `${existing ? "replaced" : "created"} OAuth provider "${spec.name}" (issuer ${spec.issuer}, client ${spec.clientId}${spec.tokenExchange ? ", token exchange" : ""})`,
      });
      return create(PutOAuthProviderResponseSchema, { provider });
    },

    async deleteOAuthProvider(req, ctx) {
      const caller = admin(ctx);
      checkVaultName("name", req.name);
      const key = buckets.permission.oauthProviderKey(req.name);
      if (!index.providers.get(key))
        throw notFound("OAuth provider", req.name, "list them with ListOAuthProviders");
      await connections.forgetProvider(req.name);
      await index.delete("providers", key);
      await vault.remove(buckets.vault.clientSecretKey(req.name));
      await events.publish(caller, {
        kind: "oauth_provider",
        id: req.name,
        type: ChangeType.DELETE,
        reason: `deleted OAuth provider "${req.name}" and its users' connections`,
      });
      return create(DeleteOAuthProviderResponseSchema, {});
    },

    listOAuthProviders(_req, ctx) {
      admin(ctx);
      const providers = [...index.providers.values()].sort((a, b) =>
        (a.spec?.name ?? "") < (b.spec?.name ?? "") ? -1 : 1,
      );
      return create(ListOAuthProvidersResponseSchema, { providers });
    },

    connectAccount(req, ctx) {
      const caller = principalOf(ctx);
      checkVaultName("provider", req.provider);
      const user = userOf(caller, req.userId);
      const link = connections.connectLink(req.provider, user);
      return create(ConnectAccountResponseSchema, {
        url: link.url,
        expiresAt: timestampFromMs(link.expiresAt),
      });
    },

    listConnections(req, ctx) {
      const caller = principalOf(ctx);
      const isAdmin = hasRole(caller, Role.Admin);
      if (req.provider !== "") checkVaultName("provider", req.provider);
      if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
      if (!isAdmin && caller.userId === "")
        throw new ConnectError(
          "ListConnections needs the role admin, or a token that acts for a user (for that user's own connections)",
          Code.PermissionDenied,
        );
      const user = isAdmin ? req.userId : caller.userId;
      const list = [...index.connections.values()]
        .filter(
          (c) =>
            (req.provider === "" || c.provider === req.provider) &&
            (user === "" || c.userId === user),
        )
        .sort((a, b) => (a.provider + a.userId < b.provider + b.userId ? -1 : 1));
      return create(ListConnectionsResponseSchema, { connections: list });
    },

    async revokeConnection(req, ctx) {
      const caller = principalOf(ctx);
      checkVaultName("provider", req.provider);
      const user = userOf(caller, req.userId);
      if (!(await connections.revoke(req.provider, user)))
        throw notFound(
          "connection",
          `${req.provider}/${user}`,
          "list connections with ListConnections",
        );
      deps.log.info({ provider: req.provider, by: caller.agentId }, "connection revoked");
      await events.publish(caller, {
        kind: "connection",
        id: `${req.provider}/${user}`,
        type: ChangeType.DELETE,
        reason: `revoked user "${user}"'s connection to OAuth provider "${req.provider}"`,
      });
      return create(RevokeConnectionResponseSchema, {});
    },
  };
}

/**
 * toolmesh registered as a client at the issuer (RFC 7591), for a provider put without a client
 * id; FAILED_PRECONDITION saying what to register by hand when the issuer offers no registration.
 */
async function registerDynamically(
  spec: OAuthProviderSpec,
  registrationEndpoint: string,
  redirectUri: string,
): Promise<{ clientId: string; clientSecret: string }> {
  if (registrationEndpoint === "")
    throw new ConnectError(
      `provider.client_id is empty and issuer ${spec.issuer} offers no dynamic client registration (RFC 7591): register toolmesh there as a confidential client with redirect URI ${redirectUri} (authorization code and refresh token grants), then put provider "${spec.name}" with that client_id and its client_secret`,
      Code.FailedPrecondition,
    );
  try {
    return await registerClient(registrationEndpoint, {
      name: `toolmesh (${spec.name})`,
      redirectUri,
      scopes: spec.scopes,
    });
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    throw new ConnectError(
      `registering toolmesh as a client of ${spec.issuer} failed (${error.error}): ${error.message}; register it by hand with redirect URI ${redirectUri} and put provider "${spec.name}" with its client_id and client_secret`,
      Code.FailedPrecondition,
    );
  }
}

/**
 * Validates a provider and fills its endpoints from the issuer's metadata when not given; with no
 * client id, also where toolmesh may register itself ("" when the issuer offers no registration).
 */
async function completeSpec(
  spec: OAuthProviderSpec | undefined,
): Promise<{ spec: OAuthProviderSpec; registrationEndpoint: string }> {
  if (!spec) throw invalidField("provider", "is required");
  checkVaultName("provider.name", spec.name);
  checkUrl("provider.issuer", spec.issuer, true);
  for (const [field, value] of [
    ["provider.authorization_endpoint", spec.authorizationEndpoint],
    ["provider.token_endpoint", spec.tokenEndpoint],
    ["provider.revocation_endpoint", spec.revocationEndpoint],
    ["provider.resource", spec.resource],
  ] as const)
    checkUrl(field, value, false);
  if (spec.clientId.length > 256)
    throw invalidField(
      "provider.client_id",
      "is longer than 256 characters: give the client id the upstream gave toolmesh",
    );
  if (spec.clientId === "" && spec.tokenExchange)
    throw invalidField(
      "provider.client_id",
      "is required with token_exchange: the client id the upstream gave toolmesh",
    );
  if (spec.scopes.length > 32) throw invalidField("provider.scopes", "has more than 32 scopes");
  for (const [i, scope] of spec.scopes.entries())
    if (!OAUTH_SCOPE.test(scope))
      throw invalidField(
        `provider.scopes[${i}]`,
        "is not an OAuth scope: 1-128 printable characters, no space, quote or backslash",
      );
  checkDescription("provider.description", spec.description);
  if (
    spec.clientId !== "" &&
    spec.tokenEndpoint &&
    (spec.authorizationEndpoint || spec.tokenExchange)
  )
    return { spec, registrationEndpoint: "" };
  let discovered: Awaited<ReturnType<typeof discoverIssuer>>;
  try {
    discovered = await discoverIssuer(spec.issuer);
  } catch (error) {
    throw new ConnectError(
      `provider.issuer ${spec.issuer}: ${error instanceof OAuthError ? error.message : String(error)}; give the endpoints explicitly or fix the issuer`,
      Code.FailedPrecondition,
    );
  }
  spec.issuer = discovered.issuer;
  spec.authorizationEndpoint ||= discovered.authorizationEndpoint;
  spec.tokenEndpoint ||= discovered.tokenEndpoint;
  spec.revocationEndpoint ||= discovered.revocationEndpoint;
  if (!spec.tokenExchange && !spec.authorizationEndpoint)
    throw new ConnectError(
      `provider.issuer ${spec.issuer} has no authorization_endpoint: users cannot connect; set token_exchange or the endpoint`,
      Code.FailedPrecondition,
    );
  return { spec, registrationEndpoint: discovered.registrationEndpoint ?? "" };
}

function checkUrl(field: string, value: string, required: boolean): void {
  if (value === "") {
    if (required) throw invalidField(field, "is required: an http:// or https:// URL");
    return;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidField(field, "is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw invalidField(field, "must be an http:// or https:// URL");
  if (value.length > 2048) throw invalidField(field, "is longer than 2048 characters");
}
