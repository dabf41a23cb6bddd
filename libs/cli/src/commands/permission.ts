import {
  ApiKeySchema,
  Effect,
  GrantSchema,
  PermissionService,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import {
  allPages,
  enumName,
  type Flags,
  flag,
  type Group,
  isoTime,
  jsonOf,
  when,
} from "../command.js";
import { type CliContext, UsageError } from "../context.js";

const permission = (ctx: CliContext) => ctx.client("permission", PermissionService);

/** The one principal named by --agent, --user or --role. */
function principalOf(flags: Flags, required: boolean) {
  const given = (["agent", "user", "role"] as const).filter((k) => flag(flags, k) !== undefined);
  if (given.length > 1) throw new UsageError("name one principal: --agent, --user or --role");
  const kind = given[0];
  if (!kind) {
    if (required)
      throw new UsageError("name who the grant is for: --agent <id>, --user <id> or --role <name>");
    return undefined;
  }
  const kinds = { agent: PrincipalKind.AGENT, user: PrincipalKind.USER, role: PrincipalKind.ROLE };
  return { kind: kinds[kind], id: flag(flags, kind) ?? "" };
}

const principalFlags = {
  agent: { type: "string" },
  user: { type: "string" },
  role: { type: "string" },
} as const;

/** `toolmesh grants …`: who may call which tools. */
export const grants: Group = {
  summary: "list, add and revoke grants",
  sub: {
    ls: {
      summary: "list grants, optionally of one principal or covering one tool",
      usage: "grants ls [--agent ID | --user ID | --role NAME] [--tool NAME]",
      options: { ...principalFlags, tool: { type: "string" } },
      async run(ctx, _args, flags) {
        const principal = principalOf(flags, false);
        const list = await allPages(async (pageToken) => {
          const res = await permission(ctx).listGrants(
            { ...(principal ? { principal } : {}), resource: flag(flags, "tool") ?? "", pageToken },
            ctx.auth(),
          );
          return { items: res.grants, next: res.nextPageToken };
        });
        ctx.out.result(
          list.map((g) => jsonOf(GrantSchema, g)),
          () =>
            ctx.out.table(
              ["ID", "EFFECT", "PRINCIPAL", "RESOURCE", "SCOPES", "EXPIRES", "ENABLED"],
              list.map((g) => [
                g.id,
                enumName(Effect, g.spec?.effect ?? 0),
                `${enumName(PrincipalKind, g.spec?.principal?.kind ?? 0).toLowerCase()}:${g.spec?.principal?.id ?? ""}`,
                `${enumName(ResourceKind, g.spec?.resource?.kind ?? 0).toLowerCase()}:${g.spec?.resource?.pattern ?? ""}`,
                g.spec?.scopes.join(",") ?? "",
                when(g.spec?.expiresAt),
                g.spec?.enabled ? "yes" : "no",
              ]),
            ),
        );
        return 0;
      },
    },
    add: {
      summary: "allow (or --deny) a principal a tool, glob or group with scopes",
      usage:
        "grants add (--agent ID | --user ID | --role NAME) (--tool NAME | --glob 'data.*' | --group G) --scopes read:data,… [--deny] [--expires ISO] [--description TEXT]",
      details: [
        "Example: toolmesh grants add --agent report-bot --glob 'data.*' --scopes read:data",
      ],
      options: {
        ...principalFlags,
        tool: { type: "string" },
        glob: { type: "string" },
        group: { type: "string" },
        scopes: { type: "string" },
        deny: { type: "boolean" },
        expires: { type: "string" },
        description: { type: "string" },
      },
      async run(ctx, _args, flags) {
        const principal = principalOf(flags, true);
        const resources = (
          [
            ["tool", ResourceKind.TOOL],
            ["glob", ResourceKind.GLOB],
            ["group", ResourceKind.GROUP],
          ] as const
        ).filter(([k]) => flag(flags, k) !== undefined);
        if (resources.length !== 1)
          throw new UsageError(
            "name exactly one resource: --tool <name>, --glob <pattern> or --group <name>",
          );
        const [key, kind] = resources[0] as (typeof resources)[number];
        const scopes = (flag(flags, "scopes") ?? "")
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
        const res = await permission(ctx).grant(
          {
            grant: {
              principal,
              resource: { kind, pattern: flag(flags, key) ?? "" },
              scopes,
              effect: flags.deny ? Effect.DENY : Effect.ALLOW,
              enabled: true,
              description: flag(flags, "description") ?? "",
              expiresAt: isoTime(flag(flags, "expires"), "expires"),
            },
          },
          ctx.auth(),
        );
        const grant = res.grant;
        ctx.out.result(grant ? jsonOf(GrantSchema, grant) : {}, () =>
          ctx.out.line(`granted ${grant?.id ?? ""}`),
        );
        return 0;
      },
    },
    revoke: {
      summary: "revoke a grant by id",
      usage: "grants revoke <grant-id>",
      args: [1, 1],
      async run(ctx, [grantId]) {
        await permission(ctx).revoke({ grantId }, ctx.auth());
        ctx.out.result({ revoked: grantId }, () => ctx.out.line(`revoked grant ${grantId}`));
        return 0;
      },
    },
  },
};

/** `toolmesh keys …`: API keys. */
export const keys: Group = {
  summary: "create, list and revoke API keys",
  sub: {
    create: {
      summary: "create an API key for an agent; its secret is printed once",
      usage: "keys create --agent ID [--name TEXT] [--user ID] [--roles agent,…] [--expires ISO]",
      options: {
        agent: { type: "string" },
        name: { type: "string" },
        user: { type: "string" },
        roles: { type: "string" },
        expires: { type: "string" },
      },
      async run(ctx, _args, flags) {
        const agentId = flag(flags, "agent");
        if (!agentId) throw new UsageError("name the agent the key is for: --agent <id>");
        const roles = (flag(flags, "roles") ?? "")
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
        const res = await permission(ctx).createApiKey(
          {
            agentId,
            userId: flag(flags, "user") ?? "",
            roles,
            name: flag(flags, "name") ?? "",
            expiresAt: isoTime(flag(flags, "expires"), "expires"),
          },
          ctx.auth(),
        );
        ctx.out.result(
          { apiKey: res.apiKey ? jsonOf(ApiKeySchema, res.apiKey) : {}, secret: res.secret },
          () => {
            ctx.out.line(res.secret);
            ctx.out.note(
              `key ${res.apiKey?.id ?? ""} for ${agentId}: the secret above is shown only once`,
            );
          },
        );
        return 0;
      },
    },
    ls: {
      summary: "list API keys (never their secrets)",
      usage: "keys ls [--agent ID] [--all]",
      details: ["--all includes revoked keys."],
      options: { agent: { type: "string" }, all: { type: "boolean" } },
      async run(ctx, _args, flags) {
        const list = await allPages(async (pageToken) => {
          const res = await permission(ctx).listApiKeys(
            { agentId: flag(flags, "agent") ?? "", includeRevoked: flags.all === true, pageToken },
            ctx.auth(),
          );
          return { items: res.apiKeys, next: res.nextPageToken };
        });
        ctx.out.result(
          list.map((k) => jsonOf(ApiKeySchema, k)),
          () =>
            ctx.out.table(
              ["ID", "AGENT", "NAME", "ROLES", "CREATED", "EXPIRES", "STATE"],
              list.map((k) => [
                k.id,
                k.agentId,
                k.name,
                k.roles.join(","),
                when(k.createdAt),
                when(k.expiresAt),
                k.revoked ? ctx.out.paint("red", "revoked") : "active",
              ]),
            ),
        );
        return 0;
      },
    },
    revoke: {
      summary: "revoke an API key by id; calls with it fail within a second",
      usage: "keys revoke <key-id>",
      args: [1, 1],
      async run(ctx, [id]) {
        await permission(ctx).revokeApiKey({ id }, ctx.auth());
        ctx.out.result({ revoked: id }, () => ctx.out.line(`revoked key ${id}`));
        return 0;
      },
    },
  },
};
