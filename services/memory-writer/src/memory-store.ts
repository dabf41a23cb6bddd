import { type FileHandle, mkdir, open, readdir, readFile, truncate } from "node:fs/promises";
import path from "node:path";
import { subjectToken } from "@toolmesh/nats";
import type { MemoryEntry } from "./entries.js";

/** The file name of an agent's memory: its id escaped so no id can leave the directory. */
export function memoryFileName(agentId: string): string {
  return `${subjectToken(agentId)}.jsonl`;
}

/**
 * Per-agent, append-only JSONL files under `<dataDir>/memory`. A call is written as its entries
 * in one write followed by fsync; the calls already written are known, so a redelivered event
 * is skipped. At open, a torn tail left by a crash mid-write is cut back to the last whole call.
 */
export class MemoryStore {
  private readonly files = new Map<string, FileHandle>();
  private readonly written = new Set<string>();

  private constructor(readonly dir: string) {}

  static async open(dataDir: string): Promise<MemoryStore> {
    const store = new MemoryStore(path.join(dataDir, "memory"));
    await mkdir(store.dir, { recursive: true });
    for (const name of await readdir(store.dir)) {
      if (name.endsWith(".jsonl")) await store.load(path.join(store.dir, name));
    }
    return store;
  }

  /** Learns the calls in a file and cuts off anything after the last complete call. */
  private async load(file: string): Promise<void> {
    const text = await readFile(file, "utf8");
    let complete = 0;
    let offset = 0;
    let openCall: string | undefined;
    for (const line of text.split("\n")) {
      const end = offset + Buffer.byteLength(line) + 1;
      if (end > Buffer.byteLength(text)) break;
      offset = end;
      let entry: MemoryEntry;
      try {
        entry = JSON.parse(line) as MemoryEntry;
      } catch {
        break;
      }
      if (entry.type === "tool_call") {
        openCall = entry.id;
      } else if (entry.type === "tool_result" && openCall === entry.parent_id) {
        this.written.add(openCall);
        openCall = undefined;
        complete = offset;
      }
    }
    if (complete < Buffer.byteLength(text)) await truncate(file, complete);
  }

  has(callId: string): boolean {
    return this.written.has(callId);
  }

  get size(): number {
    return this.written.size;
  }

  /** Appends a call's entries to its agent's file and returns once they are on disk. */
  async append(agentId: string, callId: string, entries: MemoryEntry[]): Promise<void> {
    let file = this.files.get(agentId);
    if (!file) {
      file = await open(path.join(this.dir, memoryFileName(agentId)), "a");
      this.files.set(agentId, file);
    }
    await file.appendFile(entries.map((e) => `${JSON.stringify(e)}\n`).join(""));
    await file.sync();
    this.written.add(callId);
  }

  async close(): Promise<void> {
    for (const file of this.files.values()) await file.close();
    this.files.clear();
  }
}
