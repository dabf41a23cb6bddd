import { clone, create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { hasRole, principalOf, Role, requireRole } from "@toolmesh/auth";
import { alreadyExists, Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  ChangeType,
  type Group,
  GroupSchema,
  type Principal,
  type RegistryService,
  RuntimeKind,
  RuntimeSummarySchema,
  SchemaFormat,
  type Tool,
  ToolSchema,
  ToolStatus,
  WatchEventType,
  type WatchToolsResponse,
  WatchToolsResponseSchema,
} from "@toolmesh/proto";
import type { ValidatorCache } from "@toolmesh/schema";
import type { RegistryEvents } from "./events.js";
import { decodePageToken, encodePageToken, filterFingerprint, pageSize } from "./page-token.js";
import { type RegistryStore, StoreConflictError, type ToolChange } from "./store.js";
import { exportedName, renderTool, withDigest } from "./tool-export.js";
import { checkGroup, checkName, checkToolSpec } from "./validation.js";
import type { ToolVisibility } from "./visibility.js";

/** What the registry handlers need. */
export interface RegistryDeps {
  store: RegistryStore;
  events: RegistryEvents;
  visibility: ToolVisibility;
  validators: ValidatorCache;
  log: Logger;
  /** Aborted when the server drains; ends WatchTools streams. */
  shutdownSignal?: AbortSignal;
}

const RUNTIME_KINDS = [RuntimeKind.GRPC, RuntimeKind.LOCAL, RuntimeKind.REMOTE] as const;
const CAS_ATTEMPTS = 5;
/** Changes a WatchTools stream may have queued for a slow reader before it is ended. */
const WATCH_BACKLOG = 10_000;
const REDACTED = "[redacted]";

/** The RegistryService over a store, an event sink and a visibility rule. */
export function createRegistryHandlers(deps: RegistryDeps): ServiceImpl<typeof RegistryService> {
  const { store, events, visibility, validators, log } = deps;
  let sortedVersion = -1;
  let sorted: Tool[] = [];

  /** Every tool by name, rebuilt only when the store changed. */
  const sortedTools = (): Tool[] => {
    if (sortedVersion !== store.version()) {
      sorted = [...store.tools()].sort((a, b) => compare(a.spec?.name ?? "", b.spec?.name ?? ""));
      sortedVersion = store.version();
    }
    return sorted;
  };

  const ensureReady = () => {
    if (!store.ready())
      throw new ConnectError(
        "the registry is still loading its store; retry in a moment",
        Code.Unavailable,
      );
  };

  /** A reader's view: admins and services see all; others only the tools visibility allows. */
  const viewerOf = (ctx: HandlerContext) => {
    ensureReady();
    const p = principalOf(ctx);
    const full = hasRole(p, Role.Admin, Role.Service);
    if (!full && !visibility.ready())
      throw new ConnectError(
        "the permission snapshot is still loading; retry in a moment",
        Code.Unavailable,
      );
    return {
      principal: p,
      full,
      sees: (tool: Tool | undefined): tool is Tool =>
        tool !== undefined && (full || visibility.canUse(p, tool)),
      show: (tool: Tool): Tool => (full ? tool : redact(tool)),
    };
  };

  /** A group as a viewer sees it: agents see only the tools they may use, and no empty groups. */
  const groupView = (
    group: Group,
    viewer: { full: boolean; sees: (tool: Tool | undefined) => boolean },
  ): Group | undefined => {
    if (viewer.full) return group;
    const tools = group.tools.filter((name) => viewer.sees(store.tool(name)));
    if (tools.length === 0) return undefined;
    const copy = clone(GroupSchema, group);
    copy.tools = tools;
    return copy;
  };

  const visibleNames = (sees: (tool: Tool) => boolean) =>
    sortedTools()
      .filter(sees)
      .map((t) => t.spec?.name ?? "");

  const toolNotFound = (name: string, sees: (tool: Tool) => boolean) =>
    notFound("tool", name, nearHint(name, visibleNames(sees), "tools"));

  const announce = (
    type: ChangeType,
    kind: "tool" | "group",
    name: string,
    revision: number,
    by: Principal,
    reason: string,
  ) => {
    log.info({ kind, name, revision, by: by.agentId, action: reason }, "registry write");
    return events.written({ type, kind, name, revision, by, reason });
  };

  /** Rewrites a tool's derived `groups` list, retrying when a concurrent write wins. */
  const syncToolGroups = async (
    name: string,
    change: (groups: string[]) => string[],
    by: Principal,
  ) => {
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
        if (!(error instanceof StoreConflictError)) throw error;
      }
    }
    log.error({ tool: name }, "could not update the groups of a tool after several attempts");
    throw new ConnectError(
      `tool "${name}" kept changing while its groups were updated; retry`,
      Code.Aborted,
    );
  };

  return {
    async registerTool(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      ensureReady();
      const checked = checkToolSpec(req.tool, validators);
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
      let revision: number;
      try {
        revision = await store.createTool(tool);
      } catch (error) {
        if (error instanceof StoreConflictError)
          throw alreadyExists("tool", name, "use UpdateTool to change it, or DeregisterTool first");
        throw error;
      }
      await announce(ChangeType.PUT, "tool", name, revision, by, "register tool");
      return { tool };
    },

    async updateTool(req, ctx) {
      // Services update tools too: knowhub-sync writes the matched knowledge-hub slugs back.
      const by = requireRole(ctx, Role.Admin, Role.Service);
      ensureReady();
      const checked = checkToolSpec(req.tool, validators);
      const name = checked.spec.name;
      const current = await store.readTool(name);
      if (!current) throw toolNotFound(name, () => true);
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
      let revision: number;
      try {
        revision = await store.updateTool(tool, current.revision);
      } catch (error) {
        if (error instanceof StoreConflictError)
          throw new ConnectError(
            `tool "${name}" changed while this update ran; GetTool and retry`,
            Code.Aborted,
          );
        throw error;
      }
      await announce(ChangeType.PUT, "tool", name, revision, by, "update tool");
      return { tool };
    },

    async deregisterTool(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      ensureReady();
      checkName("name", req.name);
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
      for (let attempt = 1; ; attempt++) {
        const current = await store.readTool(req.name);
        if (!current) {
          if (removedFromGroups.length > 0) break;
          throw toolNotFound(req.name, () => true);
        }
        try {
          const revision = await store.deleteTool(req.name, current.revision);
          await announce(ChangeType.DELETE, "tool", req.name, revision, by, "deregister tool");
          break;
        } catch (error) {
          if (!(error instanceof StoreConflictError)) throw error;
          if (attempt >= CAS_ATTEMPTS)
            throw new ConnectError(
              `tool "${req.name}" kept changing while it was deregistered; retry`,
              Code.Aborted,
            );
        }
      }
      for (const group of removedFromGroups) {
        const revision = groupRevisions.get(group) ?? 0;
        await announce(
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
      const viewer = viewerOf(ctx);
      if (req.name === "") throw invalidField("name", "is required");
      const tool = store.tool(req.name);
      if (!viewer.sees(tool)) throw toolNotFound(req.name, viewer.sees);
      return { tool: viewer.show(tool) };
    },

    listTools(req, ctx) {
      const viewer = viewerOf(ctx);
      const size = pageSize(req.pageSize);
      if (!(req.runtimeKind in RuntimeKind))
        throw invalidField("runtime_kind", `${req.runtimeKind} is not a RuntimeKind`);
      if (!(req.status in ToolStatus))
        throw invalidField("status", `${req.status} is not a ToolStatus`);
      const keyword = req.keyword.toLowerCase();
      const fingerprint = filterFingerprint({
        c: req.category,
        k: keyword,
        r: req.runtimeKind,
        g: req.group,
        s: req.status,
      });
      const after = decodePageToken(req.pageToken, fingerprint);
      const tools: Tool[] = [];
      let more = false;
      for (const tool of sortedTools()) {
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
      return { tools, nextPageToken: more && last ? encodePageToken(last, fingerprint) : "" };
    },

    async *watchTools(_req, ctx) {
      requireRole(ctx, Role.Admin, Role.Service);
      ensureReady();
      const queue: ToolChange[] = [];
      let wake: (() => void) | undefined;
      let overflowed = false;
      const unsubscribe = store.onToolChange((change) => {
        if (queue.length >= WATCH_BACKLOG) overflowed = true;
        else queue.push(change);
        wake?.();
      });
      const signals = [ctx.signal, deps.shutdownSignal].filter(
        (s): s is AbortSignal => s !== undefined,
      );
      const stopped = () => signals.some((s) => s.aborted);
      const onAbort = () => wake?.();
      for (const signal of signals) signal.addEventListener("abort", onAbort);
      // Taken in the same tick as the subscription, so no change falls between snapshot and stream.
      const snapshot = sortedTools();
      try {
        for (const tool of snapshot) {
          yield watchEvent(WatchEventType.SNAPSHOT, tool.spec?.name ?? "", tool);
        }
        yield watchEvent(WatchEventType.SNAPSHOT_END, "", undefined);
        while (!stopped()) {
          if (overflowed)
            throw new ConnectError(
              `this watch fell ${WATCH_BACKLOG} changes behind; start a new WatchTools to get a fresh snapshot`,
              Code.ResourceExhausted,
            );
          const change = queue.shift();
          if (change) {
            yield change.tool
              ? watchEvent(WatchEventType.PUT, change.name, change.tool)
              : watchEvent(WatchEventType.DELETE, change.name, undefined);
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        unsubscribe();
        for (const signal of signals) signal.removeEventListener("abort", onAbort);
      }
    },

    async putGroup(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      ensureReady();
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
        if (error instanceof StoreConflictError)
          throw new ConnectError(
            `group "${group.name}" changed while this write ran; retry`,
            Code.Aborted,
          );
        throw error;
      }
      const before = new Set(existing?.value.tools ?? []);
      const after = new Set(group.tools);
      for (const name of after) {
        if (!before.has(name)) await syncToolGroups(name, (g) => [...g, group.name], by);
      }
      for (const name of before) {
        if (!after.has(name))
          await syncToolGroups(name, (g) => g.filter((x) => x !== group.name), by);
      }
      await announce(
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
      const viewer = viewerOf(ctx);
      if (req.name === "") throw invalidField("name", "is required");
      const group = store.group(req.name);
      const shown = group && groupView(group, viewer);
      if (!shown) {
        const names = [...store.groups()].filter((g) => groupView(g, viewer)).map((g) => g.name);
        throw notFound("group", req.name, nearHint(req.name, names, "groups"));
      }
      return { group: shown };
    },

    listGroups(req, ctx) {
      const viewer = viewerOf(ctx);
      const size = pageSize(req.pageSize);
      const fingerprint = filterFingerprint({ kind: "groups" });
      const after = decodePageToken(req.pageToken, fingerprint);
      const all = [...store.groups()].sort((a, b) => compare(a.name, b.name));
      const groups: Group[] = [];
      let more = false;
      for (const group of all) {
        if (after !== "" && compare(group.name, after) <= 0) continue;
        const shown = groupView(group, viewer);
        if (!shown) continue;
        if (groups.length === size) {
          more = true;
          break;
        }
        groups.push(shown);
      }
      const last = groups.at(-1)?.name;
      return { groups, nextPageToken: more && last ? encodePageToken(last, fingerprint) : "" };
    },

    async deleteGroup(req, ctx) {
      const by = requireRole(ctx, Role.Admin);
      ensureReady();
      checkName("name", req.name);
      const existing = await store.readGroup(req.name);
      if (!existing)
        throw notFound(
          "group",
          req.name,
          nearHint(
            req.name,
            [...store.groups()].map((g) => g.name),
            "groups",
          ),
        );
      try {
        await store.deleteGroup(req.name, existing.revision);
      } catch (error) {
        if (error instanceof StoreConflictError)
          throw new ConnectError(
            `group "${req.name}" changed while this delete ran; retry`,
            Code.Aborted,
          );
        throw error;
      }
      for (const name of existing.value.tools) {
        await syncToolGroups(name, (g) => g.filter((x) => x !== req.name), by);
      }
      await announce(ChangeType.DELETE, "group", req.name, existing.revision, by, "delete group");
      return {};
    },

    listRuntimes(_req, ctx) {
      const viewer = viewerOf(ctx);
      const summaries = RUNTIME_KINDS.map((kind) => create(RuntimeSummarySchema, { kind }));
      for (const tool of sortedTools()) {
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
      const viewer = viewerOf(ctx);
      if (req.format === SchemaFormat.UNSPECIFIED || !(req.format in SchemaFormat))
        throw invalidField(
          "format",
          "set one of SCHEMA_FORMAT_OPENAI, SCHEMA_FORMAT_ANTHROPIC, SCHEMA_FORMAT_MCP",
        );
      let selected: Tool[];
      if (req.group !== "") {
        const group = store.group(req.group);
        const shown = group && groupView(group, viewer);
        if (!shown) {
          const names = [...store.groups()].filter((g) => groupView(g, viewer)).map((g) => g.name);
          throw notFound("group", req.group, nearHint(req.group, names, "groups"));
        }
        selected = shown.tools.map((name) => store.tool(name)).filter(viewer.sees);
      } else {
        selected = sortedTools().filter(viewer.sees);
      }
      if (req.names.length > 0) {
        const unknown = req.names.filter((name) => !viewer.sees(store.tool(name)));
        if (unknown.length > 0) {
          throw new ConnectError(
            `${unknown.length === 1 ? "tool" : "tools"} ${unknown.map((n) => `"${n}"`).join(", ")} not found; ${nearHint(unknown[0] ?? "", visibleNames(viewer.sees), "tools") || "check the names with ListTools"}`,
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
          return {
            tool: tool.spec?.name ?? "",
            exportedName: rendered.name,
            definition: rendered.definition,
          };
        });
      return { tools };
    },
  };
}

/** Replaces a group through a mutation, retrying on concurrent writes; undefined if it is gone. */
async function updateGroupWithRetry(
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
      if (!(error instanceof StoreConflictError)) throw error;
    }
  }
  throw new ConnectError(`group "${name}" kept changing; retry`, Code.Aborted);
}

function groupsListing(groups: Iterable<Group>, name: string): string[] {
  const names: string[] = [];
  for (const group of groups) if (group.tools.includes(name)) names.push(group.name);
  return names.sort(compare);
}

function runtimeKindOf(tool: Tool): RuntimeKind {
  switch (tool.spec?.runtime?.kind.case) {
    case "grpc":
      return RuntimeKind.GRPC;
    case "local":
      return RuntimeKind.LOCAL;
    case "remote":
      return RuntimeKind.REMOTE;
    default:
      return RuntimeKind.UNSPECIFIED;
  }
}

/** The version after `previous` when the caller gave none: the next integer, or the revision count. */
function nextVersion(previous: string, revision: bigint): string {
  if (/^\d+$/.test(previous)) return String(Number(previous) + 1);
  return String(revision + 1n);
}

/** A copy without secrets a tool's owner put in its runtime (remote headers, local env values). */
function redact(tool: Tool): Tool {
  const kind = tool.spec?.runtime?.kind;
  if (kind?.case === "remote" && Object.keys(kind.value.headers).length > 0) {
    const copy = clone(ToolSchema, tool);
    const runtime = copy.spec?.runtime?.kind;
    if (runtime?.case === "remote")
      for (const key of Object.keys(runtime.value.headers)) runtime.value.headers[key] = REDACTED;
    return copy;
  }
  if (kind?.case === "local" && Object.keys(kind.value.env).length > 0) {
    const copy = clone(ToolSchema, tool);
    const runtime = copy.spec?.runtime?.kind;
    if (runtime?.case === "local")
      for (const key of Object.keys(runtime.value.env)) runtime.value.env[key] = REDACTED;
    return copy;
  }
  return tool;
}

function watchEvent(
  type: WatchEventType,
  name: string,
  tool: Tool | undefined,
): WatchToolsResponse {
  return create(WatchToolsResponseSchema, tool ? { type, name, tool } : { type, name });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** "did you mean" for a NOT_FOUND: up to five names close to the one asked for. */
export function nearHint(name: string, candidates: string[], what: string): string {
  if (candidates.length === 0) return `no ${what} are available to you`;
  const scored = candidates
    .map((candidate) => ({ candidate, distance: editDistance(name, candidate) }))
    .filter(
      ({ candidate, distance }) =>
        distance <= Math.max(2, Math.floor(name.length / 3)) ||
        (name.length >= 3 && (candidate.includes(name) || name.includes(candidate))),
    )
    .sort((a, b) => a.distance - b.distance || compare(a.candidate, b.candidate))
    .slice(0, 5)
    .map((s) => s.candidate);
  return scored.length > 0
    ? `did you mean ${scored.join(", ")}?`
    : `see List${what[0]?.toUpperCase()}${what.slice(1)} for the ${what} available to you`;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] ?? 0;
      row[j] = Math.min(
        current + 1,
        (row[j - 1] ?? 0) + 1,
        previous + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      previous = current;
    }
  }
  return row[b.length] ?? 0;
}
