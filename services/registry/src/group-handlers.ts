import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkLength, checkToolName, nameLimits } from "@toolmesh/names";
import { KvConflictError } from "@toolmesh/nats";
import { ChangeType, type Group, type RegistryService } from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import { compare, type RegistryView } from "./registry-view.js";
import { syncToolGroups } from "./tool-groups.js";
import { checkGroup } from "./validation.js";

type GroupRpcs = Pick<
  ServiceImpl<typeof RegistryService>,
  "putGroup" | "getGroup" | "listGroups" | "deleteGroup"
>;

/** Group names are the page position of ListGroups. */
const groupPages = pageTokens({
  defaultSize: 50,
  maxSize: 500,
  position: /^[a-z0-9_.-]{1,64}$/,
  maxPositionLength: nameLimits.groupName,
});

/** PutGroup, GetGroup, ListGroups and DeleteGroup; a tool's `groups` follows every change. */
export function createGroupHandlers(view: RegistryView): GroupRpcs {
  const { store } = view.deps;
  return {
    async putGroup(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      view.ensureReady();
      const group = checkGroup(req.group);
      const unknown = group.tools.filter((name) => !store.tool(name));
      if (unknown.length > 0)
        throw invalidField(
          "group.tools",
          `unknown ${unknown.length === 1 ? "tool" : "tools"} ${unknown.map((n) => `"${n}"`).join(", ")}; register ${unknown.length === 1 ? "it" : "them"} first`,
        );
      group.updatedAt = timestampNow();
      const existing = await store.readGroup(group.name);
      let revision: number;
      try {
        revision = existing
          ? await store.updateGroup(group, existing.revision)
          : await store.createGroup(group);
      } catch (error) {
        if (error instanceof KvConflictError)
          throw new ConnectError(
            `group "${group.name}" changed while this write ran; retry`,
            Code.Aborted,
          );
        throw error;
      }
      const before = new Set(existing?.value.tools ?? []);
      const after = new Set(group.tools);
      for (const name of after) {
        if (!before.has(name)) await syncToolGroups(view.deps, name, (g) => [...g, group.name], by);
      }
      for (const name of before) {
        if (!after.has(name))
          await syncToolGroups(view.deps, name, (g) => g.filter((x) => x !== group.name), by);
      }
      await view.announce(
        ChangeType.PUT,
        "group",
        group.name,
        revision,
        by,
        existing ? "replace group" : "create group",
      );
      return { group };
    },

    getGroup(req, ctx) {
      const viewer = view.viewerOf(ctx);
      if (req.name === "") throw invalidField("name", "is required");
      checkLength("name", "groupName", req.name);
      const group = store.group(req.name);
      const shown = group && view.groupView(group, viewer);
      if (!shown) throw view.groupNotFound(req.name, viewer);
      return { group: shown };
    },

    listGroups(req, ctx) {
      const viewer = view.viewerOf(ctx);
      const size = groupPages.pageSize(req.pageSize);
      const fingerprint = groupPages.fingerprint(["groups"]);
      const after = groupPages.decode(req.pageToken, fingerprint);
      const all = [...store.groups()].sort((a, b) => compare(a.name, b.name));
      const groups: Group[] = [];
      let more = false;
      for (const group of all) {
        if (after !== "" && compare(group.name, after) <= 0) continue;
        const shown = view.groupView(group, viewer);
        if (!shown) continue;
        if (groups.length === size) {
          more = true;
          break;
        }
        groups.push(shown);
      }
      const last = groups.at(-1)?.name;
      return { groups, nextPageToken: more && last ? groupPages.encode(last, fingerprint) : "" };
    },

    async deleteGroup(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      view.ensureReady();
      checkToolName("name", req.name);
      const existing = await store.readGroup(req.name);
      if (!existing) throw view.groupNotFound(req.name);
      try {
        await store.deleteGroup(req.name, existing.revision);
      } catch (error) {
        if (error instanceof KvConflictError)
          throw new ConnectError(
            `group "${req.name}" changed while this delete ran; retry`,
            Code.Aborted,
          );
        throw error;
      }
      for (const name of existing.value.tools) {
        await syncToolGroups(view.deps, name, (g) => g.filter((x) => x !== req.name), by);
      }
      await view.announce(
        ChangeType.DELETE,
        "group",
        req.name,
        existing.revision,
        by,
        "delete group",
      );
      return {};
    },
  };
}
