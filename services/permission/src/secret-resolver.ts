import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets } from "@toolmesh/nats";
import {
  type ResolvedSecret,
  ResolvedSecretSchema,
  type ResolveSecretsRequest,
} from "@toolmesh/proto";
import {
  missingSecretMessage,
  pickSecret,
  type SecretCaller,
  SecretsByName,
} from "@toolmesh/vault";
import type { OAuthConnections } from "./oauth-connections.js";
import type { VaultIndex } from "./store.js";
import type { Vault } from "./vault-store.js";

/**
 * Answers the Dispatcher's requests for a call's secret values: each need picked for the call's
 * user, agent and roles as the Dispatcher picked it (libs/vault pickSecret), opened from the vault;
 * an OAuth need is the user's access token, refreshed first when it expires soon.
 */
export class SecretResolver {
  private readonly byName: SecretsByName;

  constructor(
    index: VaultIndex,
    private readonly vault: Vault,
    private readonly connections: OAuthConnections,
  ) {
    this.byName = new SecretsByName(index.secrets);
  }

  async resolve(request: ResolveSecretsRequest): Promise<ResolvedSecret[]> {
    const caller: SecretCaller = {
      tool: request.tool,
      runtime: request.runtime,
      agentId: request.agentId,
      userId: request.userId,
      roles: request.roles,
    };
    const out: ResolvedSecret[] = [];
    for (const need of request.needs) {
      if (need.oauth) {
        const token = await this.connections.accessToken(
          need.name,
          request.userId,
          request.agentId,
        );
        out.push(
          create(ResolvedSecretSchema, {
            value: token.value,
            source: token.source,
            version: token.version,
            ...(token.expiresAt ? { expiresAt: timestampFromMs(token.expiresAt) } : {}),
          }),
        );
        continue;
      }
      const secret = pickSecret(this.byName.candidates(need.name), caller);
      const plain = secret ? await this.vault.read(buckets.vault.valueKey(secret.id)) : undefined;
      if (!secret || !plain)
        throw new ConnectError(missingSecretMessage(need.name, caller), Code.FailedPrecondition);
      out.push(
        create(ResolvedSecretSchema, {
          value: new TextDecoder().decode(plain),
          source: `secret:${secret.id}`,
          version: secret.version,
        }),
      );
    }
    return out;
  }
}
