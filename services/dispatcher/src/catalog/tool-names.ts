import { providerToolName, withDigest } from "@toolmesh/names";
import type { Tool } from "@toolmesh/proto";

/** What the index reads of the catalog: tools by registry name, and all of them. */
export interface NamedTools {
  get(name: string): Tool | undefined;
  all(): Iterable<Tool>;
}

/**
 * Maps the names models use back to registry names: a registry name stands for itself, and an
 * exported provider name (`data__query`) for the tool it was exported from. The index is rebuilt
 * from the snapshot only when a name misses it, so its cost follows the number of tools, never
 * the number of calls.
 */
export class ToolNames {
  private byExported = new Map<string, string>();

  constructor(private readonly catalog: NamedTools) {}

  /** The registry name `name` stands for, or `name` itself when no tool has it. */
  resolve(name: string): string {
    if (name === "" || this.catalog.get(name)) return name;
    const known = this.byExported.get(name);
    if (known !== undefined && this.catalog.get(known)) return known;
    this.rebuild();
    return this.byExported.get(name) ?? name;
  }

  private rebuild(): void {
    const names: string[] = [];
    for (const tool of this.catalog.all()) if (tool.spec) names.push(tool.spec.name);
    // The Registry gives the plain exported name to the first tool in name order, as here.
    names.sort();
    const index = new Map<string, string>();
    for (const name of names) {
      const exported = providerToolName(name);
      index.set(index.has(exported) ? withDigest(exported, name) : exported, name);
    }
    this.byExported = index;
  }
}
