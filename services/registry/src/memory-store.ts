import { KvConflictError } from "@toolmesh/nats";
import type { Group, Tool } from "@toolmesh/proto";
import type { RegistryStore, ToolChange, Versioned } from "./store.js";

/** An in-memory store with the same semantics, for handler tests. */
export class MemoryRegistryStore implements RegistryStore {
  private readonly toolMap = new Map<string, Versioned<Tool>>();
  private readonly groupMap = new Map<string, Versioned<Group>>();
  private readonly deletedTools = new Map<string, Tool>();
  private readonly listeners = new Set<(change: ToolChange) => void>();
  private sequence = 0;

  ready(): boolean {
    return true;
  }
  tool(name: string): Tool | undefined {
    return this.toolMap.get(name)?.value;
  }
  *tools(): Iterable<Tool> {
    for (const entry of this.toolMap.values()) yield entry.value;
  }
  group(name: string): Group | undefined {
    return this.groupMap.get(name)?.value;
  }
  *groups(): Iterable<Group> {
    for (const entry of this.groupMap.values()) yield entry.value;
  }
  version(): number {
    return this.sequence;
  }
  async readTool(name: string): Promise<Versioned<Tool> | undefined> {
    return this.toolMap.get(name);
  }
  async lastDeleted(name: string): Promise<Tool | undefined> {
    return this.toolMap.has(name) ? undefined : this.deletedTools.get(name);
  }
  async createTool(tool: Tool): Promise<number> {
    return this.write(this.toolMap, tool.spec?.name ?? "", tool, 0, true);
  }
  async updateTool(tool: Tool, revision: number): Promise<number> {
    return this.write(this.toolMap, tool.spec?.name ?? "", tool, revision, true);
  }
  async deleteTool(name: string, revision: number): Promise<number> {
    const current = this.toolMap.get(name);
    const sequence = this.write(this.toolMap, name, undefined, revision, true);
    if (current) this.deletedTools.set(name, current.value);
    return sequence;
  }
  async readGroup(name: string): Promise<Versioned<Group> | undefined> {
    return this.groupMap.get(name);
  }
  async createGroup(group: Group): Promise<number> {
    return this.write(this.groupMap, group.name, group, 0, false);
  }
  async updateGroup(group: Group, revision: number): Promise<number> {
    return this.write(this.groupMap, group.name, group, revision, false);
  }
  async deleteGroup(name: string, revision: number): Promise<number> {
    return this.write(this.groupMap, name, undefined, revision, false);
  }
  onToolChange(listener: (change: ToolChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private write<T>(
    map: Map<string, Versioned<T>>,
    key: string,
    value: T | undefined,
    revision: number,
    isTool: boolean,
  ): number {
    const current = map.get(key);
    if ((current?.revision ?? 0) !== revision) {
      throw new KvConflictError(
        `wrong last sequence: ${key} is at ${current?.revision ?? 0}, not ${revision}`,
      );
    }
    this.sequence++;
    if (value === undefined) map.delete(key);
    else map.set(key, { value, revision: this.sequence });
    if (isTool) {
      for (const listener of this.listeners)
        listener({ name: key, tool: value as Tool | undefined });
    }
    return this.sequence;
  }
}
