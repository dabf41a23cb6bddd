import { type FileHandle, mkdir, open } from "node:fs/promises";
import path from "node:path";
import { agentFiles, dayOf, memoryFileName, parseMemoryFileName } from "./layout.js";
import { lastCallIds, lastCompleteCallEnd } from "./tail.js";

/** How an agent's file is opened. */
export interface AgentFileOptions {
  /** Call ids read back from the tail at open, to recognise redeliveries of earlier writes. */
  recoveryCalls: number;
  /** Runs a read of an older file in a file slot of its own. */
  temporary<T>(fn: () => Promise<T>): Promise<T>;
}

/** A torn tail found and cut at open. */
export interface Repair {
  file: string;
  from: number;
  to: number;
}

/**
 * The file an agent's memory is appended to now, open for append and read. Rotates to a new
 * file when the UTC day changes or the file would pass its size limit; a call's entries always
 * stay in one file.
 */
export class AgentFile {
  /** The last calls in the file when it was opened, once read (see recovered()). */
  private recoveredIds: ReadonlySet<string> | undefined;

  private constructor(
    readonly dir: string,
    private handle: FileHandle,
    private day: string,
    private part: number,
    private size: number,
    /** The file as it was opened: its name, its size then, and the file before it. */
    private readonly opened: { name: string; size: number; older?: string },
    private readonly options: AgentFileOptions,
  ) {}

  /**
   * Opens the newest file of an agent directory (creating the directory and a first file if
   * needed) and cuts a torn tail back to the last complete call. The ids of its last calls are
   * read by recovered(), when asked.
   */
  static async open(
    dir: string,
    now: Date,
    options: AgentFileOptions,
  ): Promise<{ file: AgentFile; repair?: Repair }> {
    const names = await agentFiles(dir);
    const newest = names.at(-1);
    if (newest === undefined) {
      await mkdir(dir, { recursive: true });
      const day = dayOf(now);
      const name = memoryFileName(day, 0);
      const handle = await open(path.join(dir, name), "a+");
      const file = new AgentFile(dir, handle, day, 0, 0, { name, size: 0 }, options);
      file.recoveredIds = new Set();
      return { file };
    }
    const parsed = parseMemoryFileName(newest) as { day: string; part: number };
    const filePath = path.join(dir, newest);
    const handle = await open(filePath, "a+");
    try {
      const { size, repair } = await cutTornTail(handle, filePath);
      const opened = { name: newest, size, ...(names.length > 1 ? { older: names.at(-2) } : {}) };
      const file = new AgentFile(dir, handle, parsed.day, parsed.part, size, opened, options);
      return repair ? { file, repair } : { file };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * The ids of the last calls in the file when it was opened (a previous process may not have
   * acked them), read from its tail the first time they are asked for.
   */
  async recovered(): Promise<ReadonlySet<string>> {
    this.recoveredIds ??= new Set(await this.readOpenedTail());
    return this.recoveredIds;
  }

  /** The recovered ids if they were read already. */
  get recoveredIfRead(): ReadonlySet<string> | undefined {
    return this.recoveredIds;
  }

  private async readOpenedTail(): Promise<string[]> {
    const { recoveryCalls, temporary } = this.options;
    const { name, size, older } = this.opened;
    const ids =
      memoryFileName(this.day, this.part) === name
        ? await lastCallIds(this.handle, size, recoveryCalls)
        : await temporary(() => readTail(path.join(this.dir, name), size, recoveryCalls));
    if (ids.length < recoveryCalls && older !== undefined) {
      // Just rotated: the calls before the rotation are at the end of the previous file.
      const olderPath = path.join(this.dir, older);
      ids.push(
        ...(await temporary(() => readTail(olderPath, undefined, recoveryCalls - ids.length))),
      );
    }
    return ids;
  }

  /** Cuts a torn tail off the newest file of an agent directory, as at open; what it cut. */
  static async repair(dir: string): Promise<Repair | undefined> {
    const newest = (await agentFiles(dir)).at(-1);
    if (newest === undefined) return undefined;
    const filePath = path.join(dir, newest);
    const handle = await open(filePath, "r+");
    try {
      return (await cutTornTail(handle, filePath)).repair;
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends calls (each its whole lines) and returns once they are on disk (fdatasync). Calls
   * are written together, split only where a file rotates.
   */
  async append(calls: string[], now: Date, maxFileBytes: number): Promise<void> {
    const today = dayOf(now);
    let chunk: Buffer[] = [];
    let bytes = 0;
    for (const call of calls) {
      const data = Buffer.from(call, "utf8");
      if (chunk.length > 0 && this.mustRotate(today, bytes, data.length, maxFileBytes)) {
        await this.write(Buffer.concat(chunk, bytes));
        chunk = [];
        bytes = 0;
      }
      if (chunk.length === 0 && this.mustRotate(today, 0, data.length, maxFileBytes)) {
        await this.rotate(today);
      }
      chunk.push(data);
      bytes += data.length;
    }
    if (chunk.length > 0) await this.write(Buffer.concat(chunk, bytes));
  }

  private async write(data: Buffer): Promise<void> {
    try {
      await this.handle.appendFile(data);
      await this.handle.datasync();
    } catch (error) {
      // Leave no partial line behind for the next append to follow.
      await this.handle.truncate(this.size).catch(() => {});
      throw error;
    }
    this.size += data.length;
  }

  /**
   * A new day, or a file holding `pending` bytes more than it has on disk that `adding` more
   * would take past the limit (a call larger than the limit still gets a file of its own).
   */
  private mustRotate(
    today: string,
    pending: number,
    adding: number,
    maxFileBytes: number,
  ): boolean {
    // A clock that went back keeps writing to the newest file, so names stay in write order.
    const held = this.size + pending;
    return today > this.day || (held > 0 && held + adding > maxFileBytes);
  }

  private async rotate(today: string): Promise<void> {
    const newDay = today > this.day;
    const day = newDay ? today : this.day;
    const part = newDay ? 0 : this.part + 1;
    // Closed before the next opens, so an agent never holds two descriptors.
    await this.handle.close();
    this.handle = await open(path.join(this.dir, memoryFileName(day, part)), "a+");
    this.day = day;
    this.part = part;
    this.size = 0;
  }

  /** The file being written, for logs. */
  get currentFile(): string {
    return path.join(this.dir, memoryFileName(this.day, this.part));
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/** The ids of the last `count` calls of a file, from its first `size` bytes (all when undefined). */
async function readTail(
  filePath: string,
  size: number | undefined,
  count: number,
): Promise<string[]> {
  const handle = await open(filePath, "r");
  try {
    return await lastCallIds(handle, size ?? (await handle.stat()).size, count);
  } finally {
    await handle.close();
  }
}

/** Truncates whatever follows the last complete call (a crash mid-write) and syncs the cut. */
async function cutTornTail(
  handle: FileHandle,
  filePath: string,
): Promise<{ size: number; repair?: Repair }> {
  const size = (await handle.stat()).size;
  const end = await lastCompleteCallEnd(handle, size);
  if (end === undefined || end === size) return { size };
  await handle.truncate(end);
  await handle.datasync();
  return { size: end, repair: { file: filePath, from: size, to: end } };
}
