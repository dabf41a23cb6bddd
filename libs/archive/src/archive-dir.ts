import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { type ArchivedBlock, parseSegmentName, UNSEALED_SUFFIX } from "./segment-format.js";
import { SegmentReader } from "./segment-reader.js";

/** A sealed segment of an archive directory, as its name gives it. */
export interface SegmentFile {
  file: string;
  name: string;
  firstStreamSeq: number;
  lastStreamSeq: number;
}

/** The sealed segments of an archive directory in log order; none when it does not exist. */
export async function listSegments(dir: string): Promise<SegmentFile[]> {
  const names = await namesIn(dir);
  const out: SegmentFile[] = [];
  for (const name of names) {
    const range = parseSegmentName(name);
    if (range) out.push({ file: path.join(dir, name), name, ...range });
  }
  return out.sort((a, b) => a.firstStreamSeq - b.firstStreamSeq);
}

/**
 * The names in a directory; none when it does not exist (no segment sealed yet) or is not a
 * directory (the archive's writer reports that).
 */
async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
}

/** Deletes the temporary files of segments a crash cut short; returns their names. */
export async function removeUnsealed(dir: string): Promise<string[]> {
  const unsealed = (await namesIn(dir)).filter((name) => name.endsWith(UNSEALED_SUFFIX));
  await Promise.all(unsealed.map((name) => rm(path.join(dir, name), { force: true })));
  return unsealed;
}

/** A segment kept open, and how many reads use it now. */
interface CachedReader {
  reader: Promise<SegmentReader>;
  users: number;
  evicted: boolean;
}

function closeQuietly(entry: CachedReader): void {
  void entry.reader.then((r) => r.close()).catch(() => {});
}

/** Open segments a reader keeps at once. */
const OPEN_SEGMENTS = 8;
/** How often the listing is read again when a sequence is not in it. */
const RELIST_MS = 1000;

/**
 * Reads blocks from an archive directory by stream sequence, keeping a few segments open. The
 * listing is read again when a sequence past it is asked for (another process seals segments
 * into a shared directory) and when a segment has gone (deleted by the archive's age limit).
 */
export class ArchiveReader {
  private segments: SegmentFile[] = [];
  private listedAt = 0;
  private readonly open = new Map<string, CachedReader>();

  constructor(readonly dir: string) {}

  /** The segments as last listed, in log order. */
  async list(fresh = false): Promise<SegmentFile[]> {
    if (fresh || Date.now() - this.listedAt >= RELIST_MS) {
      this.segments = await listSegments(this.dir);
      this.listedAt = Date.now();
    }
    return this.segments;
  }

  /** The first stream sequence the archive holds, or undefined when it holds none. */
  async firstSeq(): Promise<number | undefined> {
    return (await this.list())[0]?.firstStreamSeq;
  }

  /** The segment holding stream sequence `seq`, or undefined. */
  async segmentFor(seq: number): Promise<SegmentFile | undefined> {
    const find = (list: SegmentFile[]) =>
      list.find((s) => s.firstStreamSeq <= seq && seq <= s.lastStreamSeq);
    return find(await this.list()) ?? find(await this.list(true));
  }

  /** The block at stream sequence `seq`, or undefined when no segment holds it. */
  async block(seq: number): Promise<ArchivedBlock | undefined> {
    const segment = await this.segmentFor(seq);
    if (!segment) return undefined;
    return this.use(segment, (reader) => reader.block(seq));
  }

  /**
   * Blocks from `fromSeq` to `toSeq` (inclusive) that the archive holds, in order. Each segment
   * is opened for this read alone, so a long read is never closed under it by the cache.
   */
  async *blocks(fromSeq: number, toSeq: number): AsyncGenerator<ArchivedBlock> {
    for (const segment of await this.list(true)) {
      if (segment.lastStreamSeq < fromSeq || segment.firstStreamSeq > toSeq) continue;
      let reader: SegmentReader;
      try {
        reader = await SegmentReader.open(segment.file);
      } catch (error) {
        // Deleted by the archive's age limit since it was listed.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      try {
        for await (const block of reader.blocks(fromSeq)) {
          if (block.seq > toSeq) return;
          yield block;
        }
      } finally {
        await reader.close();
      }
    }
  }

  /**
   * Runs `read` on a cached reader of the segment; undefined when the segment has been deleted
   * since it was listed. A reader pushed out of the cache is closed once no read uses it.
   */
  private async use<T>(
    segment: SegmentFile,
    read: (reader: SegmentReader) => Promise<T>,
  ): Promise<T | undefined> {
    let entry = this.open.get(segment.file);
    if (entry) this.open.delete(segment.file);
    else {
      entry = { reader: SegmentReader.open(segment.file), users: 0, evicted: false };
      entry.reader.catch(() => {});
    }
    // Most recently used last.
    this.open.set(segment.file, entry);
    if (this.open.size > OPEN_SEGMENTS) {
      const [oldest, evicted] = this.open.entries().next().value as [string, CachedReader];
      this.open.delete(oldest);
      evicted.evicted = true;
      if (evicted.users === 0) closeQuietly(evicted);
    }
    entry.users++;
    try {
      let reader: SegmentReader;
      try {
        reader = await entry.reader;
      } catch (error) {
        // Not opened: the next read tries again.
        if (this.open.get(segment.file) === entry) this.open.delete(segment.file);
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        this.listedAt = 0;
        return undefined;
      }
      return await read(reader);
    } finally {
      entry.users--;
      if (entry.evicted && entry.users === 0) closeQuietly(entry);
    }
  }

  /** Closes every open segment. */
  async close(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all(entries.map((entry) => entry.reader.then((r) => r.close()).catch(() => {})));
  }
}
