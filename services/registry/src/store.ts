import type { Group, Tool } from "@toolmesh/proto";

/** A stored value with the store's revision of it, for compare-and-set writes. */
export interface Versioned<T> {
  value: T;
  revision: number;
}

/** A tool or group changed: value is undefined when it was deleted. */
export interface ToolChange {
  name: string;
  tool: Tool | undefined;
}

/**
 * Where the registry keeps tools and groups. Reads of `tool`, `tools`, `group`, `groups` come from
 * memory (a watch-fed snapshot); `read*` and the writes go to the backing store and use its
 * revisions for optimistic concurrency. A write resolves once the snapshot shows it.
 */
export interface RegistryStore {
  /** True once the snapshot holds every stored value. */
  ready(): boolean;
  tool(name: string): Tool | undefined;
  tools(): Iterable<Tool>;
  group(name: string): Group | undefined;
  groups(): Iterable<Group>;
  /** Bumped on every change seen, so derived caches know when to rebuild. */
  version(): number;

  readTool(name: string): Promise<Versioned<Tool> | undefined>;
  /** The last stored value of a deregistered tool, if history still holds it. */
  lastDeleted(name: string): Promise<Tool | undefined>;
  /** Creates a tool; KvConflictError when the name exists. */
  createTool(tool: Tool): Promise<number>;
  /** Replaces a tool if it is still at `revision`; KvConflictError otherwise. */
  updateTool(tool: Tool, revision: number): Promise<number>;
  /** Deletes a tool if it is still at `revision`; KvConflictError otherwise. */
  deleteTool(name: string, revision: number): Promise<number>;

  readGroup(name: string): Promise<Versioned<Group> | undefined>;
  createGroup(group: Group): Promise<number>;
  updateGroup(group: Group, revision: number): Promise<number>;
  deleteGroup(name: string, revision: number): Promise<number>;

  /** Calls the listener on every tool change from now on; returns the unsubscribe function. */
  onToolChange(listener: (change: ToolChange) => void): () => void;
}
