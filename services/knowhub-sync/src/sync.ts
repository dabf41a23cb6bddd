import type { Client } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { buckets, type SnapshotView } from "@toolmesh/nats";
import type { RegistryService, Tool, ToolSchema } from "@toolmesh/proto";
import type { HubClient, HubEntry } from "./hub-client.js";
import { matchSlugs } from "./matcher.js";

const TOOL_PREFIX = "tools.";

/** What the sync needs; the registry token is read per call, as it may appear after start. */
export interface SyncDeps {
  tools: SnapshotView<typeof ToolSchema>;
  hub: HubClient;
  registry: Client<typeof RegistryService>;
  registryToken: () => string | undefined;
  log: Logger;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Keeps the knowledge hub and the registry's knowhub_slugs in line with the registry's tools.
 * It is state-based: every change marks a tool dirty, and a dirty tool is synced from its
 * current state, so retries are idempotent and nothing is lost while the hub is down. At start
 * every tool is dirty and hub links to tools that no longer exist are removed, which catches up
 * on whatever changed while this process was not running.
 */
export class KnowhubSync {
  private readonly dirty = new Set<string>();
  private reconcileDeleted = true;
  private wake: (() => void) | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;
  private deniedLogged = false;
  /** Rounds that finished with nothing left to do; tests await this. */
  idleRounds = 0;
  private readonly idleListeners = new Set<() => void>();

  constructor(private readonly deps: SyncDeps) {}

  start(): void {
    const { tools } = this.deps;
    this.unsubscribe = tools.onChange((change) => {
      if (change.key.startsWith(TOOL_PREFIX)) this.mark(change.key.slice(TOOL_PREFIX.length));
    });
    for (const tool of tools.values()) if (tool.spec) this.dirty.add(tool.spec.name);
    this.running = true;
    this.loop = this.run();
  }

  private mark(name: string): void {
    this.dirty.add(name);
    this.wake?.();
  }

  /** Resolves the next time the sync has nothing left to do. */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => this.idleListeners.add(resolve));
  }

  private async run(): Promise<void> {
    const initial = this.deps.initialBackoffMs ?? 250;
    const max = this.deps.maxBackoffMs ?? 30_000;
    let backoff = 0;
    while (this.running) {
      if (this.dirty.size === 0 && !this.reconcileDeleted) {
        this.idleRounds++;
        for (const listener of this.idleListeners) listener();
        this.idleListeners.clear();
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      try {
        await this.round();
        backoff = 0;
      } catch (error) {
        backoff = backoff === 0 ? initial : Math.min(max, backoff * 2);
        this.deps.log.warn(
          { err: error, retry_in_ms: backoff, pending_tools: this.dirty.size },
          "knowledge-hub sync failed; retrying",
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoff);
          this.wake = () => {
            if (!this.running) {
              clearTimeout(timer);
              resolve();
            }
          };
        });
        this.wake = undefined;
      }
    }
  }

  private async round(): Promise<void> {
    const table = await this.deps.hub.listTools();
    if (this.reconcileDeleted) {
      for (const entry of table) {
        for (const link of entry.links) {
          if (!this.deps.tools.get(buckets.registry.toolKey(link.tool))) {
            await this.deps.hub.deleteLink(entry.slug, link.tool);
          }
        }
      }
      this.reconcileDeleted = false;
    }
    for (const name of [...this.dirty]) {
      // Taken off before the work, so a change during it marks the tool again.
      this.dirty.delete(name);
      try {
        await this.syncTool(name, table);
      } catch (error) {
        this.dirty.add(name);
        throw error;
      }
    }
  }

  private async syncTool(name: string, table: HubEntry[]): Promise<void> {
    const { hub, log } = this.deps;
    const tool = this.deps.tools.get(buckets.registry.toolKey(name));
    const slugs = tool?.spec ? matchSlugs(tool.spec, table) : [];
    if (tool?.spec && slugs.join("\n") !== [...tool.spec.knowhubSlugs].sort().join("\n")) {
      await this.writeBack(tool, slugs);
    }
    for (const entry of table) {
      const linked = entry.links.find((l) => l.tool === name);
      if (tool && slugs.includes(entry.slug)) {
        const groups = [...tool.groups].sort();
        if (linked?.status === "connected" && [...linked.groups].sort().join() === groups.join()) {
          continue;
        }
        await hub.putLink(entry.slug, {
          tool: name,
          groups,
          status: "connected",
          revision: Number(tool.revision),
        });
        log.info({ tool: name, slug: entry.slug }, "tool linked in the knowledge hub");
      } else if (linked) {
        await hub.deleteLink(entry.slug, name);
        log.info({ tool: name, slug: entry.slug }, "tool unlinked in the knowledge hub");
      }
    }
  }

  /** Stores the matched slugs on the tool; a newer revision wins and is synced on its own. */
  private async writeBack(tool: Tool, slugs: string[]): Promise<void> {
    const token = this.deps.registryToken();
    if (!token) {
      throw new Error(
        "no service token for the registry: set TOOLMESH_SERVICE_TOKEN or let the permission service write <data dir>/service.token",
      );
    }
    try {
      // SetToolSlugs, not UpdateTool: this service's key may change slugs and nothing else.
      await this.deps.registry.setToolSlugs(
        { name: tool.spec?.name ?? "", knowhubSlugs: slugs, expectedRevision: tool.revision },
        { headers: { authorization: `Bearer ${token}` } },
      );
      this.deps.log.info({ tool: tool.spec?.name, knowhub_slugs: slugs }, "knowhub slugs stored");
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (code === Code.Aborted || code === Code.NotFound) return;
      if (code === Code.PermissionDenied) {
        // Retrying cannot help until an operator grants the role; the hub links still go out.
        if (!this.deniedLogged) {
          this.deps.log.error(
            { err: error },
            "the registry refused to store knowhub slugs: the service token needs the role knowhub",
          );
          this.deniedLogged = true;
        }
        return;
      }
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.wake?.();
    await this.loop;
  }
}
