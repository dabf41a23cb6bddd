import { clone } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { KvConflictError } from "@toolmesh/nats";
import { type Group, GroupSchema, type Principal, ToolSchema } from "@toolmesh/proto";
import { compare } from "./registry-view.js";
import type { RegistryStore } from "./store.js";

/** How often a compare-and-set write is retried when a concurrent write wins. */
export const CAS_ATTEMPTS = 5;

/**
 * Rewrites a tool's derived `groups` list (the groups that name it), retrying when a concurrent
 * write wins; a tool deleted meanwhile is left alone.
 */
export async function syncToolGroups(
  deps: { store: RegistryStore; log: Logger },
  name: string,
  change: (groups: string[]) => string[],
  by: Principal,
): Promise<void> {
  const { store, log } = deps;
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const current = await store.readTool(name);
    if (!current) return;
    const groups = change([...current.value.groups]).sort(compare);
    if (sameList(groups, current.value.groups)) return;
    const next = clone(ToolSchema, current.value);
    next.groups = groups;
    next.revision = current.value.revision + 1n;
    next.updatedAt = timestampNow();
    next.updatedBy = by.agentId;
    try {
      await store.updateTool(next, current.revision);
      return;
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
    }
  }
  log.error({ tool: name }, "could not update the groups of a tool after several attempts");
  throw new ConnectError(
    `tool "${name}" kept changing while its groups were updated; retry`,
    Code.Aborted,
  );
}

/** Replaces a group through a mutation, retrying on concurrent writes; undefined if it is gone. */
export async function updateGroupWithRetry(
  store: RegistryStore,
  name: string,
  mutate: (group: Group) => void,
): Promise<number | undefined> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const current = await store.readGroup(name);
    if (!current) return undefined;
    const next = clone(GroupSchema, current.value);
    mutate(next);
    next.updatedAt = timestampNow();
    try {
      return await store.updateGroup(next, current.revision);
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
    }
  }
  throw new ConnectError(`group "${name}" kept changing; retry`, Code.Aborted);
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
