import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  API_KEY_HASH_ALGORITHM,
  hasRole,
  mintApiKey,
  principalOf,
  Role,
  requireRole,
} from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { checkPrincipalId, nameLimits } from "@toolmesh/names";
import { buckets, type SnapshotView } from "@toolmesh/nats";
import { compileGrant, coversTool, PolicyNotReadyError, type PolicyTool } from "@toolmesh/policy";
import {
  type ApiKey,
  ApiKeyRecordSchema,
  ApiKeySchema,
  ChangeType,
  CheckResponseSchema,
  CreateApiKeyResponseSchema,
  type Grant,
  GrantResponseSchema,
  GrantSchema,
  ListApiKeysResponseSchema,
  ListGrantsResponseSchema,
  type PermissionService,
  PrincipalKind,
  RevokeApiKeyResponseSchema,
  RevokeResponseSchema,
  type ToolSchema,
  UpdateGrantResponseSchema,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import { createBudgetHandlers } from "./budget-handlers.js";
import type { PermissionEvents } from "./events.js";
import { createOAuthHandlers } from "./oauth-handlers.js";
import { createRateLimitHandlers } from "./rate-limit-handlers.js";
import { createSigningHandlers } from "./signing-handlers.js";
import type { PermissionStore } from "./store.js";
import {
  checkIssuedId,
  issuedIdPosition,
  validateCheck,
  validateCreateApiKey,
  validateGrantSpec,
} from "./validation.js";
import { createSecretHandlers } from "./vault-handlers.js";
import type { VaultParts } from "./vault-parts.js";

export interface PermissionDeps {
  store: PermissionStore;
  events: PermissionEvents;
  /** The Registry's tools, for the scopes and groups a decision needs (a followed snapshot). */
  tools: SnapshotView<typeof ToolSchema>;
  log: Logger;
  /** The vault, and the signing keys and OAuth connections built on it. */
  vault: VaultParts;
  /** What toolmesh's own JWTs say (the verifiers' TOOLMESH_JWT_* settings). */
  jwt: { issuer: string; audience: string; userClaim: string; rolesClaim: string };
  /** The clock; tests may pin it. */
  now?: () => number;
}

/** A grant id that sorts by creation time: 12 hex digits of milliseconds, then 8 random. */
export function newGrantId(nowMs: number): string {
  return nowMs.toString(16).padStart(12, "0") + randomBytes(4).toString("hex");
}

function describeGrant(g: Grant): string {
  const c = compileGrant(g);
  const kind = PrincipalKind[c.principalKind].toLowerCase();
  return `${c.allow ? "allow" : "deny"} ${kind} "${c.principalId}" scopes ${c.scopes.join(", ")} on ${c.pattern}`;
}

/** Grant and key ids are the page position of ListGrants and ListApiKeys. */
const pages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: issuedIdPosition,
  maxPositionLength: nameLimits.issuedId,
});

/** The tool as the decision sees it, from the registry snapshot; NOT_FOUND when unknown. */
function policyTool(tools: SnapshotView<typeof ToolSchema>, name: string): PolicyTool {
  if (!tools.isReady)
    throw new ConnectError(
      "the registry snapshot is not loaded yet; retry shortly",
      Code.Unavailable,
    );
  const tool = tools.get(buckets.registry.toolKey(name));
  if (!tool?.spec) throw notFound("tool", name, "register it with the Registry first");
  return { name, requiredScopes: tool.spec.requiredScopes, groups: tool.groups };
}

/** PermissionService: grants, API keys, rate limits, the vault (admin only), and Check. */
export function createPermissionHandlers(
  deps: PermissionDeps,
): ServiceImpl<typeof PermissionService> {
  const { store, events } = deps;
  const now = deps.now ?? Date.now;
  const admin = (ctx: HandlerContext) => requireRole(ctx, Role.Admin);

  const { vault } = deps;
  return {
    ...createRateLimitHandlers(deps),
    ...createBudgetHandlers(deps),
    ...createSecretHandlers({
      store,
      vault: vault.vault,
      events,
      log: deps.log,
      maxSecrets: vault.maxSecrets,
      now,
    }),
    ...createOAuthHandlers({
      index: store.vaultIndex,
      vault: vault.vault,
      connections: vault.connections,
      events,
      log: deps.log,
      now,
    }),
    ...createSigningHandlers({ signing: vault.signing, events, log: deps.log, jwt: deps.jwt }),

    async grant(req, ctx) {
      const caller = admin(ctx);
      const nowMs = now();
      const spec = validateGrantSpec(req.grant, nowMs);
      const grant = create(GrantSchema, {
        id: newGrantId(nowMs),
        spec,
        createdBy: caller.agentId,
        createdAt: timestampFromMs(nowMs),
        revision: 1n,
      });
      await store.createGrant(grant);
      deps.log.info({ grant_id: grant.id, by: caller.agentId }, "grant created");
      await events.publish(caller, {
        kind: "grant",
        id: grant.id,
        type: ChangeType.PUT,
        reason: `created grant ${grant.id}: ${describeGrant(grant)}`,
      });
      return create(GrantResponseSchema, { grant });
    },

    async revoke(req, ctx) {
      const caller = admin(ctx);
      checkIssuedId("grant_id", req.grantId);
      const existing = store.getGrant(req.grantId);
      if (!(await store.deleteGrant(req.grantId)))
        throw notFound("grant", req.grantId, "list grants with ListGrants");
      deps.log.info({ grant_id: req.grantId, by: caller.agentId }, "grant revoked");
      await events.publish(caller, {
        kind: "grant",
        id: req.grantId,
        type: ChangeType.DELETE,
        reason: `revoked grant ${req.grantId}${existing ? `: ${describeGrant(existing)}` : ""}`,
      });
      return create(RevokeResponseSchema, {});
    },

    async updateGrant(req, ctx) {
      const caller = admin(ctx);
      checkIssuedId("grant_id", req.grantId);
      const nowMs = now();
      const spec = validateGrantSpec(req.grant, nowMs, true);
      const result = await store.updateGrant(req.grantId, req.expectedRevision, (current) =>
        create(GrantSchema, {
          ...current,
          spec,
          revision: current.revision + 1n,
          updatedBy: caller.agentId,
          updatedAt: timestampFromMs(nowMs),
        }),
      );
      if ("missing" in result) throw notFound("grant", req.grantId, "list grants with ListGrants");
      if ("currentRevision" in result)
        throw new ConnectError(
          `grant ${req.grantId} is at revision ${result.currentRevision}, not ${req.expectedRevision}; read it with ListGrants, reapply your change and retry`,
          Code.Aborted,
        );
      deps.log.info(
        { grant_id: req.grantId, revision: String(result.revision), by: caller.agentId },
        "grant updated",
      );
      await events.publish(caller, {
        kind: "grant",
        id: req.grantId,
        type: ChangeType.PUT,
        reason: `updated grant ${req.grantId} to revision ${result.revision}: ${describeGrant(result)}`,
      });
      return create(UpdateGrantResponseSchema, { grant: result });
    },

    listGrants(req, ctx) {
      admin(ctx);
      const principal = req.principal;
      const byPrincipal = principal && principal.kind !== PrincipalKind.UNSPECIFIED;
      if (byPrincipal) checkPrincipalId("principal.id", principal.id, true);
      if (req.resource.length > 128)
        throw invalidField("resource", "is longer than 128 characters");
      const size = pages.pageSize(req.pageSize);
      const fingerprint = pages.fingerprint([
        byPrincipal ? principal.kind : 0,
        byPrincipal ? principal.id : "",
        req.resource,
      ]);
      const after = pages.decode(req.pageToken, fingerprint);
      const tool =
        req.resource && deps.tools.isReady
          ? deps.tools.get(buckets.registry.toolKey(req.resource))
          : undefined;
      const asTool: PolicyTool | undefined = req.resource
        ? { name: req.resource, requiredScopes: [], groups: tool?.groups ?? [] }
        : undefined;

      const matches: Grant[] = [];
      for (const grant of store.policy.values()) {
        if (grant.id <= after) continue;
        const c = compileGrant(grant);
        if (byPrincipal && (c.principalKind !== principal.kind || c.principalId !== principal.id))
          continue;
        if (asTool && c.pattern !== asTool.name && !coversTool(c, asTool)) continue;
        matches.push(grant);
      }
      matches.sort((a, b) => (a.id < b.id ? -1 : 1));
      const page = matches.slice(0, size);
      const last = page.at(-1);
      return create(ListGrantsResponseSchema, {
        grants: page,
        nextPageToken: matches.length > size && last ? pages.encode(last.id, fingerprint) : "",
      });
    },

    check(req, ctx) {
      const caller = principalOf(ctx);
      validateCheck(req);
      let subject = { agentId: req.agentId, userId: req.userId, roles: req.roles };
      if (!hasRole(caller, Role.Admin, Role.Service)) {
        if (req.agentId !== caller.agentId)
          throw new ConnectError(
            `Check of another agent needs the role admin or service; your token may check only agent "${caller.agentId}"`,
            Code.PermissionDenied,
          );
        // A self-check evaluates the token's own identity, not roles or a user the caller names.
        subject = { agentId: caller.agentId, userId: caller.userId, roles: [...caller.roles] };
      }
      const tool = policyTool(deps.tools, req.tool);
      try {
        const decision = store.policy.decide(subject, tool, new Date(now()));
        return create(CheckResponseSchema, { decision });
      } catch (error) {
        if (error instanceof PolicyNotReadyError)
          throw new ConnectError(error.message, Code.Unavailable);
        throw error;
      }
    },

    async createApiKey(req, ctx) {
      const caller = admin(ctx);
      const nowMs = now();
      const roles = validateCreateApiKey(req, nowMs);
      const minted = mintApiKey();
      const apiKey = create(ApiKeySchema, {
        id: minted.id,
        agentId: req.agentId,
        userId: req.userId,
        roles,
        name: req.name,
        createdAt: timestampFromMs(nowMs),
        createdBy: caller.agentId,
        ...(req.expiresAt ? { expiresAt: req.expiresAt } : {}),
      });
      await store.createKey(
        create(ApiKeyRecordSchema, {
          apiKey,
          salt: minted.salt,
          hash: minted.hash,
          hashAlgorithm: API_KEY_HASH_ALGORITHM,
        }),
      );
      deps.log.info(
        { key_id: apiKey.id, agent_id: apiKey.agentId, roles, by: caller.agentId },
        "API key created",
      );
      await events.publish(caller, {
        kind: "api_key",
        id: apiKey.id,
        type: ChangeType.PUT,
        reason: `created API key ${apiKey.id} for agent "${apiKey.agentId}" with roles ${roles.join(", ")}`,
      });
      return create(CreateApiKeyResponseSchema, { apiKey, secret: minted.token });
    },

    async revokeApiKey(req, ctx) {
      const caller = admin(ctx);
      checkIssuedId("id", req.id);
      const revoked = await store.revokeKey(req.id);
      if (!revoked) throw notFound("API key", req.id, "list keys with ListApiKeys");
      deps.log.info({ key_id: req.id, by: caller.agentId }, "API key revoked");
      await events.publish(caller, {
        kind: "api_key",
        id: req.id,
        type: ChangeType.DELETE,
        reason: `revoked API key ${req.id} of agent "${revoked.agentId}"`,
      });
      return create(RevokeApiKeyResponseSchema, {});
    },

    listApiKeys(req, ctx) {
      admin(ctx);
      if (req.agentId !== "") checkPrincipalId("agent_id", req.agentId, false);
      const size = pages.pageSize(req.pageSize);
      const fingerprint = pages.fingerprint([req.agentId, req.includeRevoked]);
      const after = pages.decode(req.pageToken, fingerprint);
      const matches: ApiKey[] = [];
      for (const record of store.keys.values()) {
        const key = record.apiKey;
        if (!key || key.id <= after) continue;
        if (req.agentId !== "" && key.agentId !== req.agentId) continue;
        if (key.revoked && !req.includeRevoked) continue;
        matches.push(key);
      }
      matches.sort((a, b) => (a.id < b.id ? -1 : 1));
      const page = matches.slice(0, size);
      const last = page.at(-1);
      return create(ListApiKeysResponseSchema, {
        apiKeys: page,
        nextPageToken: matches.length > size && last ? pages.encode(last.id, fingerprint) : "",
      });
    },
  };
}
