import { readFileSync } from "node:fs";
import {
  OAuthConnectionSchema,
  PermissionService,
  SecretHolderKind,
  SecretSchema,
  SecretToolKind,
} from "@toolmesh/proto";
import { allPages, type Flags, flag, type Group, jsonOf } from "../command.js";
import { type CliContext, UsageError } from "../context.js";

const permission = (ctx: CliContext) => ctx.client("permission", PermissionService);

/** The tools a secret serves: --tool, --glob or --runtime. */
function toolsOf(flags: Flags) {
  const given = (["tool", "glob", "runtime"] as const).filter((k) => flag(flags, k) !== undefined);
  if (given.length !== 1)
    throw new UsageError(
      "name which tools: exactly one of --tool <name>, --glob 'github.*', --runtime remote",
    );
  const key = given[0] as (typeof given)[number];
  const kinds = {
    tool: SecretToolKind.TOOL,
    glob: SecretToolKind.GLOB,
    runtime: SecretToolKind.RUNTIME,
  };
  return { toolKind: kinds[key], tool: flag(flags, key) ?? "" };
}

/** Whose calls a secret serves: --everyone, --role, --agent or --user. */
function holderOf(flags: Flags) {
  const given = (["role", "agent", "user"] as const).filter((k) => flag(flags, k) !== undefined);
  if (given.length + (flags.everyone ? 1 : 0) !== 1)
    throw new UsageError(
      "name whose calls: exactly one of --everyone, --role R, --agent ID, --user ID",
    );
  const key = given[0];
  if (!key) return { holderKind: SecretHolderKind.EVERYONE, holder: "" };
  const kinds = {
    role: SecretHolderKind.ROLE,
    agent: SecretHolderKind.AGENT,
    user: SecretHolderKind.USER,
  };
  return { holderKind: kinds[key], holder: flag(flags, key) ?? "" };
}

/** `toolmesh secrets …`: the vault's secrets, never their values. */
export const secrets: Group = {
  summary: "put, list and delete the vault's secrets (values are read from stdin, never shown)",
  sub: {
    ls: {
      summary: "list secrets: names, scopes and versions",
      usage: "secrets ls [--name NAME]",
      options: { name: { type: "string" } },
      async run(ctx, _args, flags) {
        const list = await allPages(async (pageToken) => {
          const res = await permission(ctx).listSecrets(
            { name: flag(flags, "name") ?? "", pageToken },
            ctx.auth(),
          );
          return { items: res.secrets, next: res.nextPageToken };
        });
        ctx.out.result(
          list.map((s) => jsonOf(SecretSchema, s)),
          () =>
            ctx.out.table(
              ["ID", "NAME", "TOOLS", "HOLDER", "VERSION"],
              list.map((s) => [
                s.id,
                s.name,
                `${SecretToolKind[s.scope?.toolKind ?? 0]?.toLowerCase()}:${s.scope?.tool ?? ""}`,
                `${SecretHolderKind[s.scope?.holderKind ?? 0]?.toLowerCase()}${s.scope?.holder ? `:${s.scope.holder}` : ""}`,
                String(s.version),
              ]),
            ),
        );
        return 0;
      },
    },
    put: {
      summary: "put a secret's value (from stdin) under a name and a scope",
      args: [1, 1],
      usage:
        "secrets put NAME (--tool T | --glob G | --runtime R) (--everyone | --role R | --agent ID | --user ID) [--description TEXT] < value",
      details: [
        "Example: toolmesh secrets put github-token --glob 'github.*' --everyone < token.txt",
      ],
      options: {
        tool: { type: "string" },
        glob: { type: "string" },
        runtime: { type: "string" },
        everyone: { type: "boolean" },
        role: { type: "string" },
        agent: { type: "string" },
        user: { type: "string" },
        description: { type: "string" },
      },
      async run(ctx, args, flags) {
        const name = args[0];
        if (!name) throw new UsageError("name the secret: toolmesh secrets put NAME …");
        const scope = { ...toolsOf(flags), ...holderOf(flags) };
        // From stdin only: a value on the command line would stay in the shell's history.
        const value = readFileSync(0, "utf8").replace(/\r?\n$/, "");
        const res = await permission(ctx).putSecret(
          { name, scope, value, description: flag(flags, "description") ?? "" },
          ctx.auth(),
        );
        ctx.out.result(res.secret ? jsonOf(SecretSchema, res.secret) : {}, () =>
          ctx.out.line(
            `put ${name} (${res.secret?.id ?? ""}), version ${res.secret?.version ?? 0n}`,
          ),
        );
        return 0;
      },
    },
    rm: {
      summary: "delete a secret by id (see secrets ls)",
      args: [1, 1],
      usage: "secrets rm ID",
      async run(ctx, args) {
        const id = args[0];
        if (!id) throw new UsageError("name the secret's id: toolmesh secrets rm ID");
        await permission(ctx).deleteSecret({ id }, ctx.auth());
        ctx.out.result({ deleted: id }, () => ctx.out.line(`deleted ${id}`));
        return 0;
      },
    },
  },
};

/** `toolmesh connections …`: users' accounts of OAuth upstreams. */
export const connections: Group = {
  summary: "connect, list and revoke users' accounts of OAuth upstreams",
  sub: {
    connect: {
      summary: "print the link that connects a user's account of a provider",
      args: [1, 1],
      usage: "connections connect PROVIDER [--user ID]",
      options: { user: { type: "string" } },
      async run(ctx, args, flags) {
        const provider = args[0];
        if (!provider)
          throw new UsageError("name the provider: toolmesh connections connect PROVIDER");
        const res = await permission(ctx).connectAccount(
          { provider, userId: flag(flags, "user") ?? "" },
          ctx.auth(),
        );
        ctx.out.result({ url: res.url }, () => ctx.out.line(res.url));
        return 0;
      },
    },
    ls: {
      summary: "list connections, never their tokens",
      usage: "connections ls [--provider NAME] [--user ID]",
      options: { provider: { type: "string" }, user: { type: "string" } },
      async run(ctx, _args, flags) {
        const res = await permission(ctx).listConnections(
          { provider: flag(flags, "provider") ?? "", userId: flag(flags, "user") ?? "" },
          ctx.auth(),
        );
        ctx.out.result(
          res.connections.map((c) => jsonOf(OAuthConnectionSchema, c)),
          () =>
            ctx.out.table(
              ["PROVIDER", "USER", "VERSION", "REFRESH TOKEN"],
              res.connections.map((c) => [
                c.provider,
                c.userId,
                String(c.version),
                c.hasRefreshToken ? "yes" : "no",
              ]),
            ),
        );
        return 0;
      },
    },
    revoke: {
      summary: "forget a user's tokens of a provider (revoked upstream when it can)",
      args: [1, 1],
      usage: "connections revoke PROVIDER [--user ID]",
      options: { user: { type: "string" } },
      async run(ctx, args, flags) {
        const provider = args[0];
        if (!provider)
          throw new UsageError("name the provider: toolmesh connections revoke PROVIDER");
        await permission(ctx).revokeConnection(
          { provider, userId: flag(flags, "user") ?? "" },
          ctx.auth(),
        );
        ctx.out.result({ revoked: provider }, () => ctx.out.line(`revoked ${provider}`));
        return 0;
      },
    },
  },
};
