import { clone, create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { alreadyExists, Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkLength, checkToolName, nameLimits } from "@toolmesh/names";
import { KvConflictError, updateWithRetry } from "@toolmesh/nats";
import {
  ChangeType,
  type RegistryService,
  RuntimeKind,
  type Tool,
  ToolSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { recordDefinition } from "@toolmesh/schema";
import { pageTokens } from "@toolmesh/server";
import { compare, type RegistryView, runtimeKindOf } from "./registry-view.js";
import { checkToolAgentWrite } from "./tool-agent-writes.js";
import { groupsListing, updateGroupWithRetry } from "./tool-groups.js";
import { checkSlugs, checkToolSpec } from "./validation.js";

type ToolRpcs = Pick<
  ServiceImpl<typeof RegistryService>,
  "registerTool" | "updateTool" | "setToolSlugs" | "deregisterTool" | "getTool" | "listTools"
>;

/** Tool names are the page position of ListTools. */
export const toolPages = pageTokens({
  defaultSize: 50,
  maxSize: 500,
  position: /^[a-z0-9_.-]{1,64}$/,
  maxPositionLength: nameLimits.toolName,
});

/** RegisterTool, UpdateTool, DeregisterTool, GetTool and ListTools. */
export function createToolHandlers(view: RegistryView): ToolRpcs {
  const { store, validators } = view.deps;
  return {
    async registerTool(req, ctx) {
      const by = requireRole(ctx, Role.Admin, Role.ToolAgent);
      view.ensureReady();
      const checked = checkToolSpec(req.tool, validators);
      checkToolAgentWrite(by, checked.spec, "register");
      const name = checked.spec.name;
      if (checked.spec.version === "") {
        // A name registered before keeps counting, so a re-registered tool gets a new version.
        const previous = await store.lastDeleted(name);
        checked.spec.version = previous
          ? nextVersion(previous.spec?.version ?? "", previous.revision)
          : "1";
      }
      const now = timestampNow();
      const tool = create(ToolSchema, {
        spec: checked.spec,
        schemaHash: checked.schemaHash,
        revision: 1n,
        groups: groupsListing(store.groups(), name),
        createdAt: now,
        updatedAt: now,
        updatedBy: by.agentId,
      });
      recordDefinition(tool, undefined);
      let revision: number;
      try {
        revision = await store.createTool(tool);
      } catch (error) {
        if (error instanceof KvConflictError)
          throw alreadyExists("tool", name, "use UpdateTool to change it, or DeregisterTool first");
        throw error;
      }
      await view.announce(ChangeType.PUT, "tool", name, revision, by, "register tool");
      return { tool };
    },

    async updateTool(req, ctx) {
      // Admins (and the tool agent, its own grpc tools): a tool's runtime is a command the
      // Dispatcher runs. Slugs have SetToolSlugs.
      const by = requireRole(ctx, Role.Admin, Role.ToolAgent);
      view.ensureReady();
      const checked = checkToolSpec(req.tool, validators);
      checkToolAgentWrite(by, checked.spec, "update");
      const name = checked.spec.name;
      const current = await store.readTool(name);
      if (!current) throw view.toolNotFound(name);
      const previous = current.value;
      if (req.expectedRevision !== 0n && req.expectedRevision !== previous.revision) {
        throw new ConnectError(
          `tool "${name}" is at revision ${previous.revision}, not ${req.expectedRevision}; GetTool, reapply your change and retry`,
          Code.Aborted,
        );
      }
      if (checked.spec.version === "")
        checked.spec.version = nextVersion(previous.spec?.version ?? "", previous.revision);
      const tool = create(ToolSchema, {
        spec: checked.spec,
        schemaHash: checked.schemaHash,
        revision: previous.revision + 1n,
        groups: previous.groups,
        updatedAt: timestampNow(),
        updatedBy: by.agentId,
      });
      if (previous.createdAt) tool.createdAt = previous.createdAt;
      recordDefinition(tool, previous);
      let revision: number;
      try {
        revision = await store.updateTool(tool, current.revision);
      } catch (error) {
        if (error instanceof KvConflictError)
          throw new ConnectError(
            `tool "${name}" changed while this update ran; GetTool and retry`,
            Code.Aborted,
          );
        throw error;
      }
      await view.announce(ChangeType.PUT, "tool", name, revision, by, "update tool");
      return { tool };
    },

    async setToolSlugs(req, ctx) {
      const by = requireRole(ctx, Role.Admin, Role.Knowhub);
      view.ensureReady();
      checkToolName("name", req.name);
      const slugs = checkSlugs("knowhub_slugs", req.knowhubSlugs);
      const current = await store.readTool(req.name);
      if (!current) throw view.toolNotFound(req.name);
      const previous = current.value;
      if (req.expectedRevision !== 0n && req.expectedRevision !== previous.revision) {
        throw new ConnectError(
          `tool "${req.name}" is at revision ${previous.revision}, not ${req.expectedRevision}; GetTool and retry`,
          Code.Aborted,
        );
      }
      // Only the slugs change: the spec, its version and schema hash stay as the admin wrote them.
      const tool = clone(ToolSchema, previous);
      if (tool.spec) tool.spec.knowhubSlugs = slugs;
      tool.revision = previous.revision + 1n;
      tool.updatedAt = timestampNow();
      tool.updatedBy = by.agentId;
      let revision: number;
      try {
        revision = await store.updateTool(tool, current.revision);
      } catch (error) {
        if (error instanceof KvConflictError)
          throw new ConnectError(
            `tool "${req.name}" changed while its slugs were stored; GetTool and retry`,
            Code.Aborted,
          );
        throw error;
      }
      await view.announce(ChangeType.PUT, "tool", req.name, revision, by, "set knowhub slugs");
      return { tool };
    },

    async deregisterTool(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      view.ensureReady();
      checkToolName("name", req.name);
      const removedFromGroups: string[] = [];
      const groupRevisions = new Map<string, number>();
      for (const group of [...store.groups()].sort((a, b) => compare(a.name, b.name))) {
        if (!group.tools.includes(req.name)) continue;
        const revision = await updateGroupWithRetry(store, group.name, (g) => {
          g.tools = g.tools.filter((t) => t !== req.name);
        });
        if (revision === undefined) continue;
        groupRevisions.set(group.name, revision);
        removedFromGroups.push(group.name);
      }
      const deleted = await updateWithRetry(`tool "${req.name}"`, async () => {
        const current = await store.readTool(req.name);
        if (!current) return undefined;
        return store.deleteTool(req.name, current.revision);
      });
      if (deleted === undefined && removedFromGroups.length === 0)
        throw view.toolNotFound(req.name);
      if (deleted !== undefined)
        await view.announce(ChangeType.DELETE, "tool", req.name, deleted, by, "deregister tool");
      for (const group of removedFromGroups) {
        const revision = groupRevisions.get(group) ?? 0;
        await view.announce(
          ChangeType.PUT,
          "group",
          group,
          revision,
          by,
          `remove tool ${req.name} from group`,
        );
      }
      return { removedFromGroups };
    },

    getTool(req, ctx) {
      const viewer = view.viewerOf(ctx);
      if (req.name === "") throw invalidField("name", "is required");
      checkLength("name", "toolName", req.name);
      const tool = store.tool(req.name);
      if (!viewer.sees(tool)) throw view.toolNotFound(req.name, viewer.sees);
      return { tool: viewer.show(tool) };
    },

    listTools(req, ctx) {
      const viewer = view.viewerOf(ctx);
      const size = toolPages.pageSize(req.pageSize);
      if (!(req.runtimeKind in RuntimeKind))
        throw invalidField("runtime_kind", `${req.runtimeKind} is not a RuntimeKind`);
      if (!(req.status in ToolStatus))
        throw invalidField("status", `${req.status} is not a ToolStatus`);
      checkLength("group", "groupName", req.group);
      const keyword = req.keyword.toLowerCase();
      const fingerprint = toolPages.fingerprint([
        req.category,
        keyword,
        req.runtimeKind,
        req.group,
        req.status,
      ]);
      const after = toolPages.decode(req.pageToken, fingerprint);
      const tools: Tool[] = [];
      let more = false;
      for (const tool of view.sortedTools()) {
        const spec = tool.spec;
        if (!spec || (after !== "" && compare(spec.name, after) <= 0)) continue;
        if (req.category !== "" && spec.category !== req.category) continue;
        if (req.runtimeKind !== RuntimeKind.UNSPECIFIED && runtimeKindOf(tool) !== req.runtimeKind)
          continue;
        if (req.status !== ToolStatus.UNSPECIFIED && spec.status !== req.status) continue;
        if (req.group !== "" && !tool.groups.includes(req.group)) continue;
        if (
          keyword !== "" &&
          !spec.name.toLowerCase().includes(keyword) &&
          !spec.description.toLowerCase().includes(keyword)
        )
          continue;
        if (!viewer.sees(tool)) continue;
        if (tools.length === size) {
          more = true;
          break;
        }
        tools.push(viewer.show(tool));
      }
      const last = tools.at(-1)?.spec?.name;
      return { tools, nextPageToken: more && last ? toolPages.encode(last, fingerprint) : "" };
    },
  };
}

/** The version after `previous` when the caller gave none: the next integer, or the revision count. */
function nextVersion(previous: string, revision: bigint): string {
  if (/^\d+$/.test(previous)) return String(Number(previous) + 1);
  return String(revision + 1n);
}
