import { clone } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { updateWithRetry } from "@toolmesh/nats";
import { type Group, GroupSchema, type Principal, ToolSchema } from "@toolmesh/proto";
import { compare } from "./registry-view.js";
import type { RegistryStore } from "./store.js";

/**
 * Rewrites a tool's derived `groups` list (the groups that name it), again when a concurrent
 * write wins; a tool deleted meanwhile is left alone.
 */
export async function syncToolGroups(
  deps: { store: RegistryStore },
  name: string,
  change: (groups: string[]) => string[],
  by: Principal,
): Promise<void> {
  const { store } = deps;
  await updateWithRetry(`the groups of tool "${name}"`, async () => {
    const current = await store.readTool(name);
    if (!current) return;
    const groups = change([...current.value.groups]).sort(compare);
    if (sameList(groups, current.value.groups)) return;
    const next = clone(ToolSchema, current.value);
    next.groups = groups;
    next.revision = current.value.revision + 1n;
    next.updatedAt = timestampNow();
    next.updatedBy = by.agentId;
    await store.updateTool(next, current.revision);
  });
}

/** Replaces a group through a mutation, again on concurrent writes; undefined if it is gone. */
export function updateGroupWithRetry(
  store: RegistryStore,
  name: string,
  mutate: (group: Group) => void,
): Promise<number | undefined> {
  return updateWithRetry(`group "${name}"`, async () => {
    const current = await store.readGroup(name);
    if (!current) return undefined;
    const next = clone(GroupSchema, current.value);
    mutate(next);
    next.updatedAt = timestampNow();
    return store.updateGroup(next, current.revision);
  });
}

/** The sorted names of the groups that list a tool. */
export function groupsListing(groups: Iterable<Group>, name: string): string[] {
  const names: string[] = [];
  for (const group of groups) if (group.tools.includes(name)) names.push(group.name);
  return names.sort(compare);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
