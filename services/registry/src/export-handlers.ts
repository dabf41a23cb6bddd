import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError, didYouMean, invalidField } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import {
  type RegistryService,
  RuntimeKind,
  RuntimeSummarySchema,
  SchemaFormat,
  type Tool,
  ToolStatus,
} from "@toolmesh/proto";
import { type RegistryView, runtimeKindOf } from "./registry-view.js";
import { exportedName, renderTool, withDigest } from "./tool-export.js";

type ExportRpcs = Pick<ServiceImpl<typeof RegistryService>, "listRuntimes" | "exportToolSchemas">;

const RUNTIME_KINDS = [
  RuntimeKind.GRPC,
  RuntimeKind.LOCAL,
  RuntimeKind.REMOTE,
  RuntimeKind.DOCKER,
  RuntimeKind.MCP,
] as const;

/** ListRuntimes and ExportToolSchemas: the registry summarised and rendered for model providers. */
export function createExportHandlers(view: RegistryView): ExportRpcs {
  const { store } = view.deps;
  return {
    listRuntimes(_req, ctx) {
      const viewer = view.viewerOf(ctx);
      const summaries = RUNTIME_KINDS.map((kind) => create(RuntimeSummarySchema, { kind }));
      for (const tool of view.sortedTools()) {
        if (!viewer.sees(tool)) continue;
        const summary = summaries.find((s) => s.kind === runtimeKindOf(tool));
        if (!summary) continue;
        summary.toolCount++;
        if (tool.spec?.status === ToolStatus.ACTIVE) summary.activeCount++;
        else if (tool.spec?.status === ToolStatus.DEPRECATED) summary.deprecatedCount++;
        else if (tool.spec?.status === ToolStatus.DISABLED) summary.disabledCount++;
        summary.tools.push(tool.spec?.name ?? "");
      }
      return { runtimes: summaries };
    },

    exportToolSchemas(req, ctx) {
      const viewer = view.viewerOf(ctx);
      if (req.format === SchemaFormat.UNSPECIFIED || !(req.format in SchemaFormat))
        throw invalidField(
          "format",
          "set one of SCHEMA_FORMAT_OPENAI, SCHEMA_FORMAT_ANTHROPIC, SCHEMA_FORMAT_MCP",
        );
      checkLength("group", "groupName", req.group);
      req.names.forEach((name, i) => {
        checkLength(`names[${i}]`, "toolName", name);
      });
      let selected: Tool[];
      if (req.group !== "") {
        const group = store.group(req.group);
        const shown = group && view.groupView(group, viewer);
        if (!shown) throw view.groupNotFound(req.group, viewer);
        selected = shown.tools.map((name) => store.tool(name)).filter(viewer.sees);
      } else {
        selected = view.sortedTools().filter(viewer.sees);
      }
      if (req.names.length > 0) {
        const unknown = req.names.filter((name) => !viewer.sees(store.tool(name)));
        if (unknown.length > 0) {
          throw new ConnectError(
            `${unknown.length === 1 ? "tool" : "tools"} ${unknown.map((n) => `"${n}"`).join(", ")} not found; ${didYouMean(unknown[0] ?? "", view.visibleNames(viewer.sees), "tools")}`,
            Code.NotFound,
          );
        }
        const wanted = new Set(req.names);
        selected = selected.filter((tool) => wanted.has(tool.spec?.name ?? ""));
      }
      const taken = new Set<string>();
      const tools = selected
        .filter((tool) => {
          const status = tool.spec?.status;
          if (status === ToolStatus.DISABLED) return false;
          return status !== ToolStatus.DEPRECATED || req.includeDeprecated;
        })
        .map((tool) => {
          const name = tool.spec?.name ?? "";
          let exported = exportedName(name, req.format);
          if (taken.has(exported)) exported = withDigest(exported, name);
          taken.add(exported);
          const rendered = renderTool(tool, req.format, exported);
          return { tool: name, exportedName: rendered.name, definition: rendered.definition };
        });
      return { tools };
    },
  };
}
