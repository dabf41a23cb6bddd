import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { invalidField, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { checkPrincipalId } from "@toolmesh/names";
import {
  AddSigningKeyResponseSchema,
  ChangeType,
  IssueTokenResponseSchema,
  ListSigningKeysResponseSchema,
  type PermissionService,
  RetireSigningKeyResponseSchema,
} from "@toolmesh/proto";
import type { PermissionEvents } from "./events.js";
import type { SigningKeys } from "./signing-keys.js";

type SigningRpcs = Pick<
  ServiceImpl<typeof PermissionService>,
  "addSigningKey" | "retireSigningKey" | "listSigningKeys" | "issueToken"
>;

/** Longest token IssueToken signs: a day. */
const MAX_TTL_S = 86_400;

export interface SigningDeps {
  signing: SigningKeys;
  events: PermissionEvents;
  log: Logger;
  /** The issuer and audience every service's verifier expects (TOOLMESH_JWT_ISSUER, _AUDIENCE). */
  jwt: { issuer: string; audience: string; userClaim: string; rolesClaim: string };
}

/** JWT signing keys and the tokens they sign: admin only. */
export function createSigningHandlers(deps: SigningDeps): SigningRpcs {
  const admin = (ctx: HandlerContext) => requireRole(ctx, Role.Admin);
  return {
    async addSigningKey(_req, ctx) {
      const caller = admin(ctx);
      const key = await deps.signing.add(caller);
      deps.log.info({ kid: key.kid, by: caller.agentId }, "signing key added");
      await deps.events.publish(caller, {
        kind: "signing_key",
        id: key.kid,
        type: ChangeType.PUT,
        reason: `added signing key ${key.kid} (${key.algorithm}); it signs from now on, earlier keys verify until retired`,
      });
      return create(AddSigningKeyResponseSchema, { key });
    },

    async retireSigningKey(req, ctx) {
      const caller = admin(ctx);
      if (!/^[a-f0-9]{16}$/.test(req.kid))
        throw invalidField(
          "kid",
          "is not a signing key id (16 hex digits, as ListSigningKeys shows)",
        );
      const retired = await deps.signing.retire(req.kid);
      if (!retired) throw notFound("signing key", req.kid, "list them with ListSigningKeys");
      deps.log.info({ kid: req.kid, by: caller.agentId }, "signing key retired");
      await deps.events.publish(caller, {
        kind: "signing_key",
        id: req.kid,
        type: ChangeType.DELETE,
        reason: `retired signing key ${req.kid}: tokens it signed no longer verify`,
      });
      return create(RetireSigningKeyResponseSchema, {});
    },

    listSigningKeys(_req, ctx) {
      admin(ctx);
      return create(ListSigningKeysResponseSchema, { keys: deps.signing.list() });
    },

    async issueToken(req, ctx) {
      const caller = admin(ctx);
      checkPrincipalId("agent_id", req.agentId, false);
      if (req.userId !== "") checkPrincipalId("user_id", req.userId, false);
      if (req.ttlSeconds > MAX_TTL_S)
        throw invalidField("ttl_seconds", `must be at most ${MAX_TTL_S} (a day); 0 means an hour`);
      const roles = req.roles.length > 0 ? req.roles : ["agent"];
      const { token, expiresAt } = await deps.signing.sign(
        {
          sub: req.agentId,
          ...(req.userId ? { [deps.jwt.userClaim]: req.userId } : {}),
          [deps.jwt.rolesClaim]: roles,
        },
        {
          issuer: deps.jwt.issuer,
          audience: deps.jwt.audience,
          ttlSeconds: req.ttlSeconds || 3600,
        },
      );
      deps.log.info({ agent_id: req.agentId, by: caller.agentId }, "token issued");
      await deps.events.publish(caller, {
        kind: "signing_key",
        id: req.agentId,
        type: ChangeType.PUT,
        reason: `issued a token for agent "${req.agentId}"${req.userId ? ` acting for user "${req.userId}"` : ""} with roles ${roles.join(", ")}`,
      });
      return create(IssueTokenResponseSchema, { token, expiresAt: timestampFromMs(expiresAt) });
    },
  };
}
