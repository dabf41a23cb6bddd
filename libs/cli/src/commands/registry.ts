import { clone } from "@bufbuild/protobuf";
import {
  DeleteGroupResponseSchema,
  GroupSchema,
  RegistryService,
  RuntimeKind,
  ToolSchema,
  ToolSpecSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { stringify } from "yaml";
import {
  allPages,
  enumName,
  flag,
  type Group,
  jsonOf,
  type Leaf,
  messageFrom,
  readDocument,
  when,
} from "../command.js";
import { UsageError } from "../context.js";

const registry = (ctx: Parameters<Group["sub"][string]["run"]>[0]) =>
  ctx.client("registry", RegistryService);

function enumValue<E extends Record<string, string | number>>(
  names: E,
  text: string | undefined,
  what: string,
): number {
  if (text === undefined) return 0;
  const value = names[text.toUpperCase() as keyof E];
  if (typeof value !== "number" || value === 0)
    throw new UsageError(
      `unknown ${what} "${text}"; use one of ${Object.keys(names)
        .filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED")
        .join(", ")
        .toLowerCase()}`,
    );
  return value;
}

/**
 * `tools enable` and `tools disable`: a tool's status and nothing else, compare-and-set on the
 * revision read, so a concurrent change is never overwritten. Enabling is how an operator lets
 * agents call a tool the tool agent built (it is registered disabled).
 */
function statusChange(verb: "enable" | "disable", status: ToolStatus): Leaf {
  return {
    summary:
      verb === "enable"
        ? "let agents call a tool (status active): a tool the tool agent built starts disabled"
        : "stop agents calling a tool (status disabled); its definition and history stay",
    usage: `tools ${verb} <name>`,
    args: [1, 1],
    async run(ctx, [name]) {
      const { tool } = await registry(ctx).getTool({ name }, ctx.auth());
      if (!tool?.spec) throw new UsageError(`the Registry returned no spec for ${name}`);
      const spec = clone(ToolSpecSchema, tool.spec);
      spec.status = status;
      const res = await registry(ctx).updateTool(
        { tool: spec, expectedRevision: tool.revision },
        ctx.auth(),
      );
      const json = res.tool ? jsonOf(ToolSchema, res.tool) : {};
      ctx.out.result(json, () =>
        ctx.out.line(`${verb}d ${name} (revision ${res.tool?.revision ?? 0})`),
      );
      return 0;
    },
  };
}

/** `toolmesh tools …`: the Registry's tools. */
export const tools: Group = {
  summary: "list, show, register, update, enable, disable and remove tools",
  sub: {
    ls: {
      summary: "list tools",
      usage:
        "tools ls [--status active|deprecated|disabled] [--runtime grpc|local|remote] [--group G] [--keyword K]",
      options: {
        status: { type: "string" },
        runtime: { type: "string" },
        group: { type: "string" },
        keyword: { type: "string" },
      },
      async run(ctx, _args, flags) {
        const request = {
          status: enumValue(ToolStatus, flag(flags, "status"), "status"),
          runtimeKind: enumValue(RuntimeKind, flag(flags, "runtime"), "runtime"),
          group: flag(flags, "group") ?? "",
          keyword: flag(flags, "keyword") ?? "",
        };
        const list = await allPages(async (pageToken) => {
          const res = await registry(ctx).listTools(
            { ...request, pageToken, pageSize: 500 },
            ctx.auth(),
          );
          return { items: res.tools, next: res.nextPageToken };
        });
        ctx.out.result(
          list.map((t) => jsonOf(ToolSchema, t)),
          () =>
            ctx.out.table(
              ["NAME", "VERSION", "STATUS", "RUNTIME", "GROUPS", "DESCRIPTION"],
              list.map((t) => [
                t.spec?.name ?? "",
                t.spec?.version ?? "",
                enumName(ToolStatus, t.spec?.status ?? 0),
                t.spec?.runtime?.kind.case ?? "-",
                t.groups.join(",") || "-",
                (t.spec?.description ?? "").split("\n")[0]?.slice(0, 60) ?? "",
              ]),
            ),
        );
        return 0;
      },
    },
    get: {
      summary: "show a tool: its spec, schemas and runtime",
      usage: "tools get <name>",
      args: [1, 1],
      async run(ctx, [name]) {
        const res = await registry(ctx).getTool({ name }, ctx.auth());
        const json = res.tool ? jsonOf(ToolSchema, res.tool) : {};
        ctx.out.result(json, () => ctx.out.line(stringify(json).trimEnd()));
        return 0;
      },
    },
    register: {
      summary: "register a new tool from a YAML or JSON ToolSpec",
      usage: "tools register -f tool.yaml",
      details: [
        "The file holds a ToolSpec in its JSON form, for example:",
        "  name: weather.current",
        "  description: The current weather of a city.",
        "  inputSchema: {type: object, properties: {city: {type: string}}, required: [city]}",
        "  runtime: {remote: {url: http://127.0.0.1:8080/weather}}",
      ],
      options: { file: { type: "string", short: "f" } },
      async run(ctx, _args, flags) {
        const file = flag(flags, "file");
        const spec = messageFrom(ToolSpecSchema, readDocument(file, "tool spec"), file ?? "");
        const res = await registry(ctx).registerTool({ tool: spec }, ctx.auth());
        const json = res.tool ? jsonOf(ToolSchema, res.tool) : {};
        ctx.out.result(json, () =>
          ctx.out.line(`registered ${spec.name} (revision ${res.tool?.revision ?? 0})`),
        );
        return 0;
      },
    },
    update: {
      summary: "replace a tool's spec from a YAML or JSON ToolSpec",
      usage: "tools update -f tool.yaml [--revision N]",
      details: ["--revision N fails with ABORTED when the tool changed since revision N."],
      options: { file: { type: "string", short: "f" }, revision: { type: "string" } },
      async run(ctx, _args, flags) {
        const file = flag(flags, "file");
        const spec = messageFrom(ToolSpecSchema, readDocument(file, "tool spec"), file ?? "");
        const revision = flag(flags, "revision");
        if (revision !== undefined && !/^\d+$/.test(revision))
          throw new UsageError(`--revision must be a whole number, got "${revision}"`);
        const res = await registry(ctx).updateTool(
          { tool: spec, expectedRevision: BigInt(revision ?? 0) },
          ctx.auth(),
        );
        const json = res.tool ? jsonOf(ToolSchema, res.tool) : {};
        ctx.out.result(json, () =>
          ctx.out.line(`updated ${spec.name} (revision ${res.tool?.revision ?? 0})`),
        );
        return 0;
      },
    },
    enable: statusChange("enable", ToolStatus.ACTIVE),
    disable: statusChange("disable", ToolStatus.DISABLED),
    rm: {
      summary: "deregister a tool",
      usage: "tools rm <name>",
      args: [1, 1],
      async run(ctx, [name]) {
        const res = await registry(ctx).deregisterTool({ name }, ctx.auth());
        ctx.out.result({ removed: name, removedFromGroups: res.removedFromGroups }, () =>
          ctx.out.line(
            `removed ${name}${res.removedFromGroups.length ? ` (and from groups ${res.removedFromGroups.join(", ")})` : ""}`,
          ),
        );
        return 0;
      },
    },
  },
};

/** `toolmesh groups …`: tool groups. */
export const groups: Group = {
  summary: "list, show, write and remove tool groups",
  sub: {
    ls: {
      summary: "list groups",
      usage: "groups ls",
      async run(ctx) {
        const list = await allPages(async (pageToken) => {
          const res = await registry(ctx).listGroups({ pageToken }, ctx.auth());
          return { items: res.groups, next: res.nextPageToken };
        });
        ctx.out.result(
          list.map((g) => jsonOf(GroupSchema, g)),
          () =>
            ctx.out.table(
              ["NAME", "TOOLS", "UPDATED", "DESCRIPTION"],
              list.map((g) => [
                g.name,
                g.tools.join(","),
                when(g.updatedAt),
                g.description.slice(0, 60),
              ]),
            ),
        );
        return 0;
      },
    },
    get: {
      summary: "show a group",
      usage: "groups get <name>",
      args: [1, 1],
      async run(ctx, [name]) {
        const res = await registry(ctx).getGroup({ name }, ctx.auth());
        const json = res.group ? jsonOf(GroupSchema, res.group) : {};
        ctx.out.result(json, () => ctx.out.line(stringify(json).trimEnd()));
        return 0;
      },
    },
    put: {
      summary: "create or replace a group from a YAML or JSON Group",
      usage: "groups put -f group.yaml",
      details: ["For example:  name: reporting   tools: [data.query, mail.send]   example: …"],
      options: { file: { type: "string", short: "f" } },
      async run(ctx, _args, flags) {
        const file = flag(flags, "file");
        const group = messageFrom(GroupSchema, readDocument(file, "group"), file ?? "");
        const res = await registry(ctx).putGroup({ group }, ctx.auth());
        const json = res.group ? jsonOf(GroupSchema, res.group) : {};
        ctx.out.result(json, () => ctx.out.line(`wrote group ${group.name}`));
        return 0;
      },
    },
    rm: {
      summary: "delete a group (its tools stay registered)",
      usage: "groups rm <name>",
      args: [1, 1],
      async run(ctx, [name]) {
        const res = await registry(ctx).deleteGroup({ name }, ctx.auth());
        ctx.out.result(jsonOf(DeleteGroupResponseSchema, res), () =>
          ctx.out.line(`deleted group ${name}`),
        );
        return 0;
      },
    },
  },
};
