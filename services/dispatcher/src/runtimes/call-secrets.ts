import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets, type SnapshotView } from "@toolmesh/nats";
import {
  type OAuthConnectionSchema,
  type OAuthProviderSchema,
  type Principal,
  type ResolvedSecret,
  type ResolveSecretsRequest,
  ResolveSecretsRequestSchema,
  type SecretInjection,
  type SecretSchema,
  type Tool,
} from "@toolmesh/proto";
import {
  connectionId,
  injectedText,
  missingSecretMessage,
  notConnectedMessage,
  pickSecret,
  type SecretCaller,
  SecretsByName,
} from "@toolmesh/vault";

/** The vault's public side the Dispatcher follows in the permission bucket. */
export interface VaultView {
  secrets: SnapshotView<typeof SecretSchema>;
  providers: SnapshotView<typeof OAuthProviderSchema>;
  connections: SnapshotView<typeof OAuthConnectionSchema>;
}

/** Where the values come from: Permission, asked over the bus (libs/vault requestSecrets). */
export interface VaultLink {
  resolve(request: ResolveSecretsRequest): Promise<ResolvedSecret[]>;
  /** The link that connects a user's account of a provider. */
  link(provider: string, userId: string): Promise<string>;
}

/** One injection with the text that goes where it says (prefix and value). */
export interface InjectedSecret {
  injection: SecretInjection;
  text: string;
}

/** A call's secrets, resolved: what the runtime injects, and the values to hide from what comes back. */
export interface CallSecretValues {
  injected: InjectedSecret[];
  /** The bare values, for scrubbing outputs and messages. */
  values: string[];
  /** A hash of where the values came from and their versions: a backend per distinct set. */
  fingerprint: string;
}

/** Cached values at most this many; the cache starts over when full. */
const MAX_CACHED = 10_000;

/**
 * The secrets a call's tool names, for the call's user (then agent, roles, everyone): checked
 * against the followed index before the call runs (a missing one refuses it, FAILED_PRECONDITION
 * naming it and, for OAuth, the link that connects the account), resolved by Permission when the
 * tool runs, and cached keyed on where each value came from and its version, so a put, a delete, a
 * refresh or a revocation is a cache miss, and an access token is asked for again before it expires.
 */
export class CallSecrets {
  private readonly byName: SecretsByName;
  private readonly cache = new Map<string, { values: CallSecretValues; until: number }>();

  constructor(
    private readonly view: VaultView,
    private readonly vault: VaultLink,
    /** An access token is asked for again once it expires within this long. */
    private readonly refreshMarginMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.byName = new SecretsByName(view.secrets);
  }

  /** Refuses (FAILED_PRECONDITION) a call whose tool needs a secret its caller has none of. */
  async check(tool: Tool, principal: Principal): Promise<void> {
    const missing = this.sources(tool, principal).find((s) => s.missing);
    if (missing) {
      const link = await this.vault.link(missing.name, principal.userId);
      throw new ConnectError(
        notConnectedMessage(missing.name, principal.userId, link),
        Code.FailedPrecondition,
      );
    }
  }

  /** The call's values: from the cache while every source is at the same version, else Permission's. */
  async resolve(tool: Tool, principal: Principal): Promise<CallSecretValues> {
    const sources = this.sources(tool, principal);
    const key = `${tool.spec?.name}\u0000${sources.map((s) => s.key).join("\u0000")}`;
    const now = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.values;
    const spec = tool.spec;
    const injections = spec?.secrets ?? [];
    const resolved = await this.vault.resolve(
      create(ResolveSecretsRequestSchema, {
        tool: spec?.name ?? "",
        runtime: spec?.runtime?.kind.case ?? "",
        agentId: principal.agentId,
        userId: principal.userId,
        roles: principal.roles,
        needs: injections.map((i) => ({
          name: i.secret || i.oauthProvider,
          oauth: i.oauthProvider !== "",
        })),
      }),
    );
    let until = Number.POSITIVE_INFINITY;
    const injected: InjectedSecret[] = [];
    const values: string[] = [];
    injections.forEach((injection, i) => {
      const value = resolved[i];
      if (!value) return;
      if (value.expiresAt)
        until = Math.min(until, timestampMs(value.expiresAt) - this.refreshMarginMs);
      injected.push({ injection, text: injectedText(injection, value.value) });
      values.push(value.value);
    });
    const fingerprint = createHash("sha256")
      .update(resolved.map((r) => `${r.source}@${r.version}`).join("\n"))
      .digest("hex")
      .slice(0, 16);
    const result: CallSecretValues = { injected, values, fingerprint };
    if (until > now) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(key, { values: result, until });
    }
    return result;
  }

  /**
   * Where each of a tool's secrets comes from for this caller, as the followed index says: its key
   * and version (the cache key), or a connection that is missing (its refusal needs Permission's
   * link); anything else missing throws the refusal at once.
   */
  private sources(
    tool: Tool,
    principal: Principal,
  ): { key: string; missing?: "connection"; name: string }[] {
    const spec = tool.spec;
    const caller: SecretCaller = {
      tool: spec?.name ?? "",
      runtime: spec?.runtime?.kind.case ?? "",
      agentId: principal.agentId,
      userId: principal.userId,
      roles: principal.roles,
    };
    const view = this.view;
    if (!view.secrets.isReady || !view.providers.isReady || !view.connections.isReady)
      throw new ConnectError(
        "the dispatcher has not loaded the vault's index yet; retry in a moment",
        Code.Unavailable,
      );
    const out: { key: string; missing?: "connection"; name: string }[] = [];
    for (const injection of spec?.secrets ?? []) {
      if (injection.secret) {
        const secret = pickSecret(this.byName.candidates(injection.secret), caller);
        if (!secret)
          throw new ConnectError(
            missingSecretMessage(injection.secret, caller),
            Code.FailedPrecondition,
          );
        out.push({ key: `s:${secret.id}@${secret.version}`, name: injection.secret });
        continue;
      }
      const name = injection.oauthProvider;
      const provider = this.view.providers.get(buckets.permission.oauthProviderKey(name));
      if (!provider?.spec)
        throw new ConnectError(
          `tool "${caller.tool}" needs OAuth provider "${name}", which does not exist: an admin puts it with PutOAuthProvider (\`toolmesh oauth put ${name} ...\`)`,
          Code.FailedPrecondition,
        );
      if (principal.userId === "")
        throw new ConnectError(
          `tool "${caller.tool}" needs a user's account of OAuth provider "${name}", and the call acts for no user: call with a token that acts for a user`,
          Code.FailedPrecondition,
        );
      if (provider.spec.tokenExchange) {
        out.push({ key: `x:${name}:${principal.userId}:${principal.agentId}`, name });
        continue;
      }
      const connection = this.view.connections.get(
        buckets.permission.connectionKey(connectionId(name, principal.userId)),
      );
      if (!connection) {
        out.push({ key: "", missing: "connection", name });
        continue;
      }
      const expires = connection.accessExpiresAt ? timestampMs(connection.accessExpiresAt) : 0;
      out.push({
        key: `c:${connectionId(name, principal.userId)}@${connection.version}:${expires}`,
        name,
      });
    }
    return out;
  }
}
