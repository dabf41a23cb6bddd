import { clone } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { hasRole, principalOf, Role } from "@toolmesh/auth";
import { Code, ConnectError, notFoundAmong, toolNotFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  type ChangeType,
  type Group,
  GroupSchema,
  type Principal,
  type Runtime,
  RuntimeKind,
  type Tool,
  ToolSchema,
} from "@toolmesh/proto";
import type { ValidatorCache } from "@toolmesh/schema";
import type { RegistryEvents } from "./events.js";
import type { RegistryStore } from "./store.js";
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

/** What a caller may see: admins and services everything, agents only what they may use. */
export interface Viewer {
  principal: Principal;
  full: boolean;
  sees(tool: Tool | undefined): tool is Tool;
  /** The tool as this caller may see it (runtime secrets hidden from agents). */
  show(tool: Tool): Tool;
}

const REDACTED = "[redacted]";

/**
 * The registry as each handler reads it: the sorted tool list (rebuilt only when the store
 * changed), who sees what, the not-found errors, and the announcement of every write.
 */
export class RegistryView {
  private sortedVersion = -1;
  private sorted: Tool[] = [];

  constructor(readonly deps: RegistryDeps) {}

  get store(): RegistryStore {
    return this.deps.store;
  }

  /** Every tool by name. */
  sortedTools(): Tool[] {
    const { store } = this.deps;
    if (this.sortedVersion !== store.version()) {
      this.sorted = [...store.tools()].sort((a, b) =>
        compare(a.spec?.name ?? "", b.spec?.name ?? ""),
      );
      this.sortedVersion = store.version();
    }
    return this.sorted;
  }

  ensureReady(): void {
    if (!this.deps.store.ready())
      throw new ConnectError(
        "the registry is still loading its store; retry in a moment",
        Code.Unavailable,
      );
  }

  /** The caller's view; UNAVAILABLE until the data that decides it is loaded. */
  viewerOf(ctx: HandlerContext): Viewer {
    this.ensureReady();
    const { visibility } = this.deps;
    const p = principalOf(ctx);
    const full = hasRole(p, Role.Admin, Role.Service, Role.Knowhub);
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
      show: (tool: Tool): Tool => (full ? tool : withoutRuntimeSecrets(tool)),
    };
  }

  /** A group as a viewer sees it: agents see only the tools they may use, and no empty groups. */
  groupView(group: Group, viewer: Viewer): Group | undefined {
    if (viewer.full) return group;
    const tools = group.tools.filter((name) => viewer.sees(this.deps.store.tool(name)));
    if (tools.length === 0) return undefined;
    const copy = clone(GroupSchema, group);
    copy.tools = tools;
    return copy;
  }

  /** The names of the tools `sees` accepts, sorted. */
  visibleNames(sees: (tool: Tool) => boolean): string[] {
    return this.sortedTools()
      .filter(sees)
      .map((t) => t.spec?.name ?? "");
  }

  /** NOT_FOUND for a tool, suggesting the names this caller may see. */
  toolNotFound(name: string, sees: (tool: Tool) => boolean = () => true): ConnectError {
    return toolNotFound(name, this.visibleNames(sees), "suggest");
  }

  /** NOT_FOUND for a group, suggesting the groups this caller may see. */
  groupNotFound(name: string, viewer?: Viewer): ConnectError {
    const names = [...this.deps.store.groups()]
      .filter((g) => !viewer || this.groupView(g, viewer))
      .map((g) => g.name);
    return notFoundAmong("group", name, names, "groups");
  }

  /** Logs a write and publishes its change event and audit record. */
  announce(
    type: ChangeType,
    kind: "tool" | "group",
    name: string,
    revision: number,
    by: Principal,
    reason: string,
  ): Promise<void> {
    this.deps.log.info({ kind, name, revision, by: by.agentId, action: reason }, "registry write");
    return this.deps.events.publish({ type, kind, name, revision, by, reason });
  }
}

export function runtimeKindOf(tool: Tool): RuntimeKind {
  switch (tool.spec?.runtime?.kind.case) {
    case "grpc":
      return RuntimeKind.GRPC;
    case "local":
      return RuntimeKind.LOCAL;
    case "remote":
      return RuntimeKind.REMOTE;
    case "docker":
      return RuntimeKind.DOCKER;
    case "mcp":
      return RuntimeKind.MCP;
    default:
      return RuntimeKind.UNSPECIFIED;
  }
}

/** A copy without secrets a tool's owner put in its runtime (headers and environment values). */
function withoutRuntimeSecrets(tool: Tool): Tool {
  const kind = tool.spec?.runtime?.kind;
  if (secretMaps(kind).every((secrets) => Object.keys(secrets).length === 0)) return tool;
  const copy = clone(ToolSchema, tool);
  for (const hidden of secretMaps(copy.spec?.runtime?.kind)) {
    for (const key of Object.keys(hidden)) hidden[key] = REDACTED;
  }
  return copy;
}

/** The maps of a runtime that may hold its owner's secrets (headers, environment values). */
function secretMaps(kind: Runtime["kind"] | undefined): Record<string, string>[] {
  switch (kind?.case) {
    case "remote":
      return [kind.value.headers];
    case "local":
    case "docker":
      return [kind.value.env];
    case "mcp":
      return [kind.value.headers, kind.value.env];
    default:
      return [];
  }
}

/** Byte-wise string order (names are ASCII), the order of every listing. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
