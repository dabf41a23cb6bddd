import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { subjectToken } from "@toolmesh/nats";

/**
 * The memory layout, for the writer and for anyone who reads memory:
 *
 *   <data dir>/memory/<agent dir>/<YYYY-MM-DD>.<NNNN>.jsonl
 *
 * One directory per agent; in it, append-only JSONL files named for the UTC day they were
 * written and a part number that starts at 0000 and grows when a file reaches its size limit.
 * Sorting the names sorts the files in write order; the last one is the one being written.
 */
export const MEMORY_DIR = "memory";

/** Agent ids escape to at most this many characters before a hash stands in for the rest. */
const READABLE_MAX = 64;
const READABLE_PREFIX = 48;

/**
 * The directory name of an agent's memory: the id escaped as a subject token (so `..` or `/`
 * cannot leave the memory directory); an escaped id longer than 64 characters keeps its first 48
 * and adds `~` and 16 hex digits of its SHA-256, so any legal id gives a name well under every
 * file system's limit. `~` never appears in an escaped id, so the two forms cannot collide.
 */
export function agentDirName(agentId: string): string {
  const escaped = subjectToken(agentId);
  if (escaped.length <= READABLE_MAX) return escaped;
  const hash = createHash("sha256").update(agentId).digest("hex").slice(0, 16);
  return `${escaped.slice(0, READABLE_PREFIX)}~${hash}`;
}

/** Where an agent's memory files live. */
export function agentMemoryDir(dataDir: string, agentId: string): string {
  return path.join(dataDir, MEMORY_DIR, agentDirName(agentId));
}

/** A memory file's name: `2026-11-25.0000.jsonl`. */
export function memoryFileName(day: string, part: number): string {
  return `${day}.${String(part).padStart(4, "0")}.jsonl`;
}

/** The day and part of a memory file name, or undefined for any other file. */
export function parseMemoryFileName(name: string): { day: string; part: number } | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})\.(\d{4,})\.jsonl$/.exec(name);
  return m ? { day: m[1] as string, part: Number(m[2]) } : undefined;
}

/** The UTC day of a time, as used in file names. */
export function dayOf(time: Date): string {
  return time.toISOString().slice(0, 10);
}

/** The memory files in an agent directory, oldest first; empty when it does not exist. */
export async function agentFiles(agentDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(agentDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return names
    .map((name) => ({ name, parsed: parseMemoryFileName(name) }))
    .filter((f) => f.parsed !== undefined)
    .sort((a, b) =>
      a.parsed?.day === b.parsed?.day
        ? (a.parsed?.part ?? 0) - (b.parsed?.part ?? 0)
        : (a.parsed?.day ?? "") < (b.parsed?.day ?? "")
          ? -1
          : 1,
    )
    .map((f) => f.name);
}

/** Every line of an agent's memory, oldest first: what a reader of the layout does. */
export async function readAgentMemory(dataDir: string, agentId: string): Promise<string> {
  const dir = agentMemoryDir(dataDir, agentId);
  const parts: string[] = [];
  for (const name of await agentFiles(dir))
    parts.push(await readFile(path.join(dir, name), "utf8"));
  return parts.join("");
}
