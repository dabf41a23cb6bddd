import { createHash } from "node:crypto";
import { globMatches } from "@toolmesh/policy";
import { type Secret, SecretHolderKind, type SecretScope, SecretToolKind } from "@toolmesh/proto";

/** The call a secret is picked for: its tool, the tool's runtime kind, and who calls. */
export interface SecretCaller {
  tool: string;
  /** The runtime kind word: grpc, local, remote, docker or mcp. */
  runtime: string;
  agentId: string;
  userId: string;
  roles: readonly string[];
}

/** The runtime kind words a secret scope may name. */
export const RUNTIME_WORDS = ["grpc", "local", "remote", "docker", "mcp"] as const;

/**
 * A secret's id: a hash of its name and scope, so putting the same name and scope again
 * replaces the value instead of adding a second one.
 */
export function secretId(name: string, scope: SecretScope): string {
  return createHash("sha256")
    .update(
      JSON.stringify([name, scope.toolKind, scope.tool, scope.holderKind, scope.holder]),
      "utf8",
    )
    .digest("hex")
    .slice(0, 24);
}

/** The id of a user's connection to an OAuth provider (its keys in both buckets). */
export function connectionId(provider: string, userId: string): string {
  return createHash("sha256")
    .update(JSON.stringify([provider, userId]), "utf8")
    .digest("hex")
    .slice(0, 24);
}

/** Whether a scope covers a call: its tools, and its holder. */
export function scopeCovers(scope: SecretScope, caller: SecretCaller): boolean {
  return holderRank(scope, caller) >= 0 && toolRank(scope, caller) >= 0;
}

/** How closely the holder fits: user 3, agent 2, role 1, everyone 0; -1 when it does not. */
function holderRank(scope: SecretScope, caller: SecretCaller): number {
  switch (scope.holderKind) {
    case SecretHolderKind.USER:
      return caller.userId !== "" && scope.holder === caller.userId ? 3 : -1;
    case SecretHolderKind.AGENT:
      return scope.holder === caller.agentId ? 2 : -1;
    case SecretHolderKind.ROLE:
      return caller.roles.includes(scope.holder) ? 1 : -1;
    case SecretHolderKind.EVERYONE:
      return 0;
    default:
      return -1;
  }
}

/** How closely the tools fit: the tool 2, a glob 1, a runtime 0; -1 when they do not. */
function toolRank(scope: SecretScope, caller: SecretCaller): number {
  switch (scope.toolKind) {
    case SecretToolKind.TOOL:
      return scope.tool === caller.tool ? 2 : -1;
    case SecretToolKind.GLOB:
      return globMatches(scope.tool, caller.tool) ? 1 : -1;
    case SecretToolKind.RUNTIME:
      return scope.tool === caller.runtime ? 0 : -1;
    default:
      return -1;
  }
}

/**
 * The secret of a name a call takes: the user's first, then the agent's, the roles', everyone's;
 * for one holder the tool's own before a glob's before a runtime's; a longer glob before a
 * shorter one, and the lower id last, so every reader picks the same one.
 */
export function pickSecret(candidates: Iterable<Secret>, caller: SecretCaller): Secret | undefined {
  let best: Secret | undefined;
  let bestRank = -1;
  for (const secret of candidates) {
    const scope = secret.scope;
    if (!scope) continue;
    const holder = holderRank(scope, caller);
    const tool = holder < 0 ? -1 : toolRank(scope, caller);
    if (tool < 0) continue;
    const rank = holder * 3 + tool;
    if (rank > bestRank || (rank === bestRank && best && tieBreak(secret, best) < 0)) {
      best = secret;
      bestRank = rank;
    }
  }
  return best;
}

function tieBreak(a: Secret, b: Secret): number {
  const byLength = (b.scope?.tool.length ?? 0) - (a.scope?.tool.length ?? 0);
  if (byLength !== 0) return byLength;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The scope in a line for messages and records: `user alice on tool github.issues`. */
export function describeScope(scope: SecretScope | undefined): string {
  if (!scope) return "no scope";
  const holder =
    scope.holderKind === SecretHolderKind.EVERYONE
      ? "everyone"
      : `${SecretHolderKind[scope.holderKind]?.toLowerCase() ?? "?"} ${scope.holder}`;
  const tools =
    scope.toolKind === SecretToolKind.RUNTIME
      ? `${scope.tool} tools`
      : `${SecretToolKind[scope.toolKind]?.toLowerCase() ?? "?"} ${scope.tool}`;
  return `${holder} on ${tools}`;
}

/**
 * Why a call has no secret of a name, and how to give it one: for the FAILED_PRECONDITION that
 * refuses the call (the Dispatcher) or a resolution (Permission), worded once.
 */
export function missingSecretMessage(name: string, caller: SecretCaller): string {
  const who = caller.userId
    ? `user "${caller.userId}" (agent "${caller.agentId}")`
    : `agent "${caller.agentId}"`;
  return `tool "${caller.tool}" needs secret "${name}", and the vault has none for ${who}: an admin puts one with PutSecret (\`toolmesh secrets put ${name} --tool ${caller.tool} ...\`)${caller.userId ? `, or the user puts their own, scoped to user "${caller.userId}"` : ""}`;
}

/** Why a call has no token of an OAuth provider for its user, with the link that connects one. */
export function notConnectedMessage(provider: string, userId: string, link: string): string {
  return `user "${userId}" has not connected an account of OAuth provider "${provider}": open ${link} to connect it (ConnectAccount, or \`toolmesh connections connect ${provider} --user ${userId}\`, gives a new link)`;
}
