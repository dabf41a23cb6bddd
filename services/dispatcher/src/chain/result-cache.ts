import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Principal, Tool } from "@toolmesh/proto";
import { canonicalJson } from "@toolmesh/schema";
import { counter, gauge } from "@toolmesh/telemetry";

/** How the result cache is bounded (docs/configuration.md). */
export interface ResultCacheSettings {
  /** Output bytes (as JSON) kept at most across every tool. */
  maxBytes: number;
  /** Entries of one tool kept at most when its spec sets no cache_max_entries. */
  maxEntries: number;
}

/** One kept result: what a hit answers, and the call whose result it is. */
export interface CachedResult {
  output: JsonObject;
  callId: string;
  expiresMs: number;
  bytes: number;
}

/** A tool's entries, for one definition of it: a new definition starts an empty set. */
interface ToolEntries {
  definition: string;
  entries: Map<string, CachedResult>;
}

/** Bytes counted for an entry besides its output: its key, ids and map slots. */
const ENTRY_OVERHEAD = 256;

const cacheMetrics = () => ({
  lookups: counter(
    "toolmesh_dispatcher_cache_lookups_total",
    "Calls of tools with a result cache, by tool and result (hit: answered from the cache; miss: the tool ran)",
    ["tool", "result"],
  ),
});

/**
 * Results of read-only, idempotent tools (ToolSpec.cache_ttl_ms), in memory, keyed by the tool's
 * definition, the canonical arguments and the caller's visibility: the user the call is made for
 * and the grants that authorised it. A changed definition, pin or grant therefore never meets an
 * old entry. Bounded by entries per tool and bytes in all; least recently used go first.
 */
export class ResultCache {
  private readonly tools = new Map<string, ToolEntries>();
  private bytes = 0;
  private readonly metrics = cacheMetrics();

  constructor(
    private readonly settings: ResultCacheSettings,
    private readonly now: () => number = Date.now,
  ) {
    const cache = this;
    gauge(
      "toolmesh_dispatcher_cache_bytes",
      "Output bytes the result cache holds",
      [],
      function collect() {
        this.set(cache.bytes);
      },
    );
  }

  /** The key of a call, or undefined when its tool has no cache. */
  keyOf(
    tool: Tool,
    args: JsonObject,
    principal: Principal,
    grantIds: readonly string[],
  ): string | undefined {
    if (!tool.spec?.cacheTtlMs) return undefined;
    const grants = grantIds.length > 1 ? [...grantIds].sort() : grantIds;
    return createHash("sha256")
      .update(`${principal.userId}\u0000${grants.join(",")}\u0000${canonicalJson(args)}`)
      .digest("base64url");
  }

  /** The live result kept for a call's key; counts a hit or a miss. */
  get(tool: Tool, key: string): CachedResult | undefined {
    const name = tool.spec?.name ?? "";
    const held = this.entriesOf(tool);
    const found = held.entries.get(key);
    if (found && found.expiresMs > this.now()) {
      // Used again: it moves to the end, the last to go.
      held.entries.delete(key);
      held.entries.set(key, found);
      this.metrics.lookups.inc({ tool: name, result: "hit" });
      return found;
    }
    if (found) this.drop(held, key, found);
    this.metrics.lookups.inc({ tool: name, result: "miss" });
    return undefined;
  }

  /** Keeps a successful call's output for the tool's TTL. */
  put(tool: Tool, key: string, output: JsonObject, callId: string): void {
    const spec = tool.spec;
    if (!spec?.cacheTtlMs) return;
    const bytes = JSON.stringify(output).length + ENTRY_OVERHEAD;
    if (bytes > this.settings.maxBytes) return;
    const held = this.entriesOf(tool);
    const previous = held.entries.get(key);
    if (previous) this.drop(held, key, previous);
    const limit = spec.cacheMaxEntries || this.settings.maxEntries;
    while (held.entries.size >= limit) this.dropOldest(held);
    // Room in all: the oldest entries of this tool go first, then of the others.
    while (this.bytes + bytes > this.settings.maxBytes && held.entries.size > 0)
      this.dropOldest(held);
    for (const other of this.tools.values()) {
      while (this.bytes + bytes > this.settings.maxBytes && other.entries.size > 0)
        this.dropOldest(other);
    }
    held.entries.set(key, { output, callId, expiresMs: this.now() + spec.cacheTtlMs, bytes });
    this.bytes += bytes;
  }

  /** Entries and bytes held, for tests and status. */
  get size(): { entries: number; bytes: number } {
    let entries = 0;
    for (const held of this.tools.values()) entries += held.entries.size;
    return { entries, bytes: this.bytes };
  }

  private entriesOf(tool: Tool): ToolEntries {
    const name = tool.spec?.name ?? "";
    let held = this.tools.get(name);
    if (held?.definition !== tool.definitionHash) {
      // A new definition: no old result may answer it.
      if (held) for (const [key, entry] of held.entries) this.drop(held, key, entry);
      held = { definition: tool.definitionHash, entries: new Map() };
      this.tools.set(name, held);
    }
    return held;
  }

  private dropOldest(held: ToolEntries): void {
    const first = held.entries.entries().next().value;
    if (first) this.drop(held, first[0], first[1]);
  }

  private drop(held: ToolEntries, key: string, entry: CachedResult): void {
    held.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}
