import type { FileHandle } from "node:fs/promises";

/** A complete (newline-terminated) line of a file and where it sits. */
export interface Line {
  text: string;
  /** Byte offset of its first byte. */
  start: number;
  /** Byte offset just past its newline. */
  end: number;
}

/**
 * Reads start small and double: the last few lines (a torn-tail check) fit in the first read,
 * and a start-up that checks a thousand agents' files allocates 4 KiB for each, not 64.
 */
const FIRST_CHUNK = 4 * 1024;
const MAX_CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

/**
 * The complete lines of a file, last first, reading backwards from `size` in chunks of 4 KiB
 * growing to 64 KiB, so a caller that stops early has read only the tail. Bytes after the last
 * newline (a torn write) are not a line.
 */
export async function* linesBackward(file: FileHandle, size: number): AsyncGenerator<Line> {
  // buf holds bytes [pos, pos + buf.length) of the file, never more than the line in hand.
  let buf = Buffer.alloc(0);
  let pos = size;
  let chunkSize = FIRST_CHUNK;
  const newlineBefore = async (before: number): Promise<number> => {
    for (;;) {
      if (before > pos) {
        const i = buf.lastIndexOf(NEWLINE, before - pos - 1);
        if (i >= 0) return pos + i;
      }
      if (pos === 0) return -1;
      const from = Math.max(0, pos - chunkSize);
      chunkSize = Math.min(MAX_CHUNK, chunkSize * 2);
      const chunk = Buffer.alloc(pos - from);
      await readFully(file, chunk, from);
      buf = Buffer.concat([chunk, buf]);
      pos = from;
    }
  };
  const last = await newlineBefore(size);
  if (last < 0) return;
  let end = last + 1;
  buf = buf.subarray(0, end - pos);
  for (;;) {
    const previous = await newlineBefore(end - 1);
    const start = previous + 1;
    yield { text: buf.toString("utf8", start - pos, end - 1 - pos), start, end };
    if (previous < 0) return;
    end = start;
    buf = buf.subarray(0, end - pos);
  }
}

async function readFully(file: FileHandle, into: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await file.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) throw new Error(`file shorter than expected at ${position + done}`);
    done += bytesRead;
  }
}

/** The parts of a memory line that recovery needs. */
export interface LineHead {
  id: string;
  parentId: string;
  type: string;
}

// JSON.stringify keeps key order, so every line the writer wrote starts like this; reading the
// head alone spares parsing outputs that may be megabytes long.
const HEAD =
  /^\{"id":("(?:[^"\\]|\\.)*"),"parent_id":("(?:[^"\\]|\\.)*"),"timestamp":"[^"\\]*","type":"([a-z_]+)"/;

/** The id, parent id and type of a memory line; undefined for anything else. */
export function lineHead(text: string): LineHead | undefined {
  const m = HEAD.exec(text);
  if (m) {
    return {
      id: JSON.parse(m[1] as string) as string,
      parentId: JSON.parse(m[2] as string) as string,
      type: m[3] as string,
    };
  }
  try {
    const entry = JSON.parse(text) as { id?: unknown; parent_id?: unknown; type?: unknown };
    if (typeof entry.id !== "string" || typeof entry.type !== "string") return undefined;
    return { id: entry.id, parentId: String(entry.parent_id ?? ""), type: entry.type };
  } catch {
    return undefined;
  }
}

/** Lines a torn write can leave before the last whole call: a call line and a partial one. */
const TORN_LINES_MAX = 4;

/**
 * Where the last complete call of a file ends: just past a tool_result line whose previous line
 * is its tool_call. A crash mid-write leaves at most a call line and a partial line after it;
 * anything else at the end is not ours to cut, so then the whole file is kept (undefined).
 */
export async function lastCompleteCallEnd(
  file: FileHandle,
  size: number,
): Promise<number | undefined> {
  let newer: { line: Line; head: LineHead | undefined } | undefined;
  let seen = 0;
  for await (const line of linesBackward(file, size)) {
    const head = lineHead(line.text);
    if (
      newer?.head?.type === "tool_result" &&
      head?.type === "tool_call" &&
      newer.head.parentId === head.id
    ) {
      return newer.line.end;
    }
    newer = { line, head };
    if (++seen > TORN_LINES_MAX) return undefined;
  }
  // No whole call at all: only a torn first write.
  return seen <= TORN_LINES_MAX ? 0 : undefined;
}

/**
 * The call ids of the last `count` calls of a file (newest first), from its tail; the call line
 * of each result line that follows it.
 */
export async function lastCallIds(
  file: FileHandle,
  size: number,
  count: number,
): Promise<string[]> {
  const ids: string[] = [];
  if (count <= 0) return ids;
  for await (const line of linesBackward(file, size)) {
    const head = lineHead(line.text);
    if (head?.type !== "tool_call") continue;
    ids.push(head.id);
    if (ids.length >= count) break;
  }
  return ids;
}
