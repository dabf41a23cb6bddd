import { createHash } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
import zlib from "node:zlib";
import { type Codec, codecOf, decompress } from "./compression.js";
import {
  type ArchivedBlock,
  CHECKSUM_OFFSET,
  decodeEntries,
  decodeHeader,
  decodeTrailer,
  type FrameEntry,
  HEADER_BYTES,
  SegmentError,
  type SegmentFooter,
  TRAILER_BYTES,
  TRAILER_CHECKED_BYTES,
} from "./segment-format.js";

/** The largest footer a reader accepts: far above a 64 MiB segment's (a few KiB of frames). */
const MAX_FOOTER_BYTES = 64 * 1024 * 1024;
/** Bytes hashed per read while checking a file's checksum. */
const CHECKSUM_CHUNK = 1024 * 1024;

/**
 * Reads a sealed segment: its footer at open, then a block by stream sequence (decompressing
 * only the frame that holds it) or every block in order. Keeps the file open until close(); a
 * segment deleted meanwhile stays readable through the open file.
 */
export class SegmentReader {
  /** The last frame decompressed, kept for the next read of a neighbouring block. */
  private cached: { index: number; blocks: ArchivedBlock[] } | undefined;

  private constructor(
    private readonly handle: FileHandle,
    readonly file: string,
    readonly size: number,
    readonly footer: SegmentFooter,
    private readonly footerEnd: number,
  ) {}

  /** Opens a segment and reads its footer; throws SegmentError when it is not a sealed segment. */
  static async open(file: string): Promise<SegmentReader> {
    const handle = await open(file, "r");
    try {
      const { size } = await handle.stat();
      if (size < HEADER_BYTES + TRAILER_BYTES)
        throw new SegmentError("truncated", `the file is ${size} bytes, too short for a segment`);
      const codecId = decodeHeader(await readAt(handle, 0, HEADER_BYTES));
      const codec = codecOf(codecId);
      if (!codec)
        throw new SegmentError("codec", `codec ${codecId} is not one this toolmesh reads`);
      const trailer = decodeTrailer(await readAt(handle, size - TRAILER_BYTES, TRAILER_BYTES));
      const footerEnd = trailer.footerOffset + trailer.footerLength;
      if (
        trailer.footerOffset < HEADER_BYTES ||
        trailer.footerLength > MAX_FOOTER_BYTES ||
        footerEnd !== size - TRAILER_BYTES
      )
        throw new SegmentError("footer", "the trailer does not point at a footer in this file");
      const footer = parseFooter(
        await readAt(handle, trailer.footerOffset, trailer.footerLength),
        codec,
      );
      return new SegmentReader(handle, file, size, footer, footerEnd);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** True when the file's SHA-256 matches the checksum in its trailer. */
  async checksumMatches(): Promise<boolean> {
    const hash = createHash("sha256");
    for (let at = 0; at < this.footerEnd; at += CHECKSUM_CHUNK) {
      hash.update(await readAt(this.handle, at, Math.min(CHECKSUM_CHUNK, this.footerEnd - at)));
    }
    const trailer = await readAt(this.handle, this.footerEnd, TRAILER_BYTES);
    hash.update(trailer.subarray(0, TRAILER_CHECKED_BYTES));
    return hash.digest().equals(trailer.subarray(CHECKSUM_OFFSET, CHECKSUM_OFFSET + 32));
  }

  /** The blocks of frame `index`, in order; throws SegmentError when the frame is damaged. */
  async frame(index: number): Promise<ArchivedBlock[]> {
    if (this.cached?.index === index) return this.cached.blocks;
    const entry = this.footer.frames[index] as FrameEntry;
    const compressed = await readAt(this.handle, entry.offset, entry.length);
    if (zlib.crc32(compressed) !== entry.crc32)
      throw new SegmentError("frame", `frame ${index} (blocks ${frameRange(entry)}) is damaged`);
    let raw: Uint8Array;
    try {
      raw = await decompress(this.footer.codec, compressed, entry.rawLength);
    } catch (error) {
      throw new SegmentError("frame", `frame ${index} (blocks ${frameRange(entry)}) is damaged`, {
        cause: error,
      });
    }
    const blocks = decodeEntries(raw);
    this.cached = { index, blocks };
    return blocks;
  }

  /** The block at stream sequence `seq`, or undefined when the segment does not hold it. */
  async block(seq: number): Promise<ArchivedBlock | undefined> {
    const frames = this.footer.frames;
    let low = 0;
    let high = frames.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const entry = frames[mid] as FrameEntry;
      if (seq < entry.firstStreamSeq) high = mid - 1;
      else if (seq > entry.lastStreamSeq) low = mid + 1;
      else return (await this.frame(mid)).find((b) => b.seq === seq);
    }
    return undefined;
  }

  /** Every block from stream sequence `fromSeq` on, in order, a frame at a time. */
  async *blocks(fromSeq = 0): AsyncGenerator<ArchivedBlock> {
    for (const [index, entry] of this.footer.frames.entries()) {
      if (entry.lastStreamSeq < fromSeq) continue;
      for (const block of await this.frame(index)) if (block.seq >= fromSeq) yield block;
    }
  }

  async close(): Promise<void> {
    this.cached = undefined;
    await this.handle.close();
  }
}

function frameRange(entry: FrameEntry): string {
  return `${entry.firstStreamSeq}–${entry.lastStreamSeq}`;
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const out = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(out, done, length - done, position + done);
    if (bytesRead === 0)
      throw new SegmentError("truncated", `the file ends before byte ${position + length}`);
    done += bytesRead;
  }
  return out;
}

/** The footer's JSON, checked for the fields readers rely on. */
function parseFooter(bytes: Uint8Array, codec: Codec): SegmentFooter {
  let footer: SegmentFooter;
  try {
    footer = JSON.parse(Buffer.from(bytes).toString()) as SegmentFooter;
  } catch (error) {
    throw new SegmentError("footer", "the footer is not JSON", { cause: error });
  }
  const frames = Array.isArray(footer?.frames) ? footer.frames : undefined;
  const numbers = ["firstStreamSeq", "lastStreamSeq", "blocks", "records"] as const;
  if (!frames || numbers.some((key) => !Number.isSafeInteger(footer[key])))
    throw new SegmentError("footer", "the footer lacks its sequences, counts or frames");
  if (footer.codec !== codec)
    throw new SegmentError("footer", `the footer names codec ${footer.codec}, the header ${codec}`);
  for (const [i, frame] of frames.entries()) {
    const fields = [
      frame?.offset,
      frame?.length,
      frame?.rawLength,
      frame?.firstStreamSeq,
      frame?.lastStreamSeq,
      frame?.crc32,
    ];
    if (fields.some((n) => !Number.isSafeInteger(n) || (n as number) < 0))
      throw new SegmentError("footer", `frame ${i} of the footer is malformed`);
  }
  return footer;
}
