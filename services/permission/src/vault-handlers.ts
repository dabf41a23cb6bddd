import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { hasRole, principalOf, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import {
  ChangeType,
  DeleteSecretResponseSchema,
  ListSecretsResponseSchema,
  type PermissionService,
  PutSecretResponseSchema,
  type Secret,
  SecretHolderKind,
  SecretSchema,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import { describeScope, secretId } from "@toolmesh/vault";
import type { PermissionEvents } from "./events.js";
import type { PermissionStore } from "./store.js";
import { checkDescription } from "./validation.js";
import type { Vault } from "./vault-store.js";
import {
  checkSecretValue,
  checkVaultName,
  requireSecretOwner,
  validateScope,
} from "./vault-validation.js";

type SecretRpcs = Pick<
  ServiceImpl<typeof PermissionService>,
  "putSecret" | "deleteSecret" | "listSecrets"
>;

export interface VaultDeps {
  store: PermissionStore;
  vault: Vault;
  events: PermissionEvents;
  log: Logger;
  maxSecrets: number;
  now?: () => number;
}

/** Secret ids are the page position of ListSecrets. */
const pages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: /^[a-f0-9]{24}$/,
  maxPositionLength: 24,
});

/** PutSecret, DeleteSecret and ListSecrets: values sealed in the vault, the index public. */
export function createSecretHandlers(deps: VaultDeps): SecretRpcs {
  const { store, vault, events } = deps;
  const index = store.vaultIndex;
  const now = deps.now ?? Date.now;

  return {
    async putSecret(req, ctx) {
      const caller = principalOf(ctx);
      checkVaultName("name", req.name);
      const scope = validateScope(req.scope);
      requireSecretOwner(caller, scope);
      checkSecretValue(req.value);
      checkDescription("description", req.description);
      const id = secretId(req.name, scope);
      const key = buckets.permission.secretKey(id);
      const existing = index.secrets.get(key);
      if (!existing && index.secrets.size >= deps.maxSecrets)
        throw new ConnectError(
          `the vault holds ${deps.maxSecrets} secrets (TOOLMESH_VAULT_MAX_SECRETS); delete unused ones first`,
          Code.ResourceExhausted,
        );
      const secret = create(SecretSchema, {
        id,
        name: req.name,
        scope,
        version: (existing?.version ?? 0n) + 1n,
        description: req.description,
        updatedBy: caller.agentId,
        updatedAt: timestampFromMs(now()),
      });
      // The value first: the index never names a secret whose value is not stored.
      await vault.write(buckets.vault.valueKey(id), new TextEncoder().encode(req.value));
      await index.put("secrets", key, secret);
      deps.log.info(
        { secret_id: id, name: req.name, version: String(secret.version), by: caller.agentId },
        "secret put",
      );
      await events.publish(caller, {
        kind: "secret",
        id,
        type: ChangeType.PUT,
        reason: `${existing ? "replaced" : "put"} secret "${req.name}" (${id}) for ${describeScope(scope)}, version ${secret.version}`,
      });
      return create(PutSecretResponseSchema, { secret });
    },

    async deleteSecret(req, ctx) {
      const caller = principalOf(ctx);
      if (!/^[a-f0-9]{24}$/.test(req.id))
        throw invalidField("id", "is not a secret id (24 hex digits, as ListSecrets shows)");
      const key = buckets.permission.secretKey(req.id);
      const existing = index.secrets.get(key);
      if (!existing) throw notFound("secret", req.id, "list secrets with ListSecrets");
      requireSecretOwner(caller, existing.scope ?? validateScope(undefined));
      // The index first: from here on no call takes the secret.
      await index.delete("secrets", key);
      await vault.remove(buckets.vault.valueKey(req.id));
      deps.log.info(
        { secret_id: req.id, name: existing.name, by: caller.agentId },
        "secret deleted",
      );
      await events.publish(caller, {
        kind: "secret",
        id: req.id,
        type: ChangeType.DELETE,
        reason: `deleted secret "${existing.name}" (${req.id}) for ${describeScope(existing.scope)}`,
      });
      return create(DeleteSecretResponseSchema, {});
    },

    listSecrets(req, ctx) {
      const caller = principalOf(ctx);
      const admin = hasRole(caller, Role.Admin);
      if (!admin && caller.userId === "")
        throw new ConnectError(
          "ListSecrets needs the role admin, or a token that acts for a user (for that user's own secrets)",
          Code.PermissionDenied,
        );
      if (req.name !== "") checkVaultName("name", req.name);
      const size = pages.pageSize(req.pageSize);
      const fingerprint = pages.fingerprint([req.name, admin ? "" : caller.userId]);
      const after = pages.decode(req.pageToken, fingerprint);
      const matches: Secret[] = [];
      for (const secret of index.secrets.values()) {
        if (secret.id <= after) continue;
        if (req.name !== "" && secret.name !== req.name) continue;
        if (
          !admin &&
          !(
            secret.scope?.holderKind === SecretHolderKind.USER &&
            secret.scope.holder === caller.userId
          )
        )
          continue;
        matches.push(secret);
      }
      matches.sort((a, b) => (a.id < b.id ? -1 : 1));
      const page = matches.slice(0, size);
      const last = page.at(-1);
      return create(ListSecretsResponseSchema, {
        secrets: page,
        nextPageToken: matches.length > size && last ? pages.encode(last.id, fingerprint) : "",
      });
    },
  };
}
