import { createHash, type Hash, randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import zlib from "node:zlib";
import { firstRecord, lastRecord, recordBytes } from "@toolmesh/records";
import { CODEC_IDS, type Codec, compress, DEFAULT_CODEC } from "./compression.js";
import {
  type ArchivedBlock,
  blockHeaders,
  encodeEntry,
  encodeHeader,
  encodeTrailer,
  FORMAT_VERSION,
  type FrameEntry,
  type SegmentFooter,
  segmentName,
  storedSize,
  TRAILER_CHECKED_BYTES,
  UNSEALED_SUFFIX,
} from "./segment-format.js";

/** The uncompressed size a frame is cut at: one block read decompresses about this much. */
export const DEFAULT_FRAME_BYTES = 256 * 1024;

export interface SegmentWriterOptions {
  /** The log stream's name and creation time, recorded in the footer. */
  stream: string;
  streamCreated: string;
  codec?: Codec;
  frameBytes?: number;
}

/** A segment written whole: its file and footer. */
export interface SealedSegment {
  file: string;
  footer: SegmentFooter;
}

/**
 * Writes one segment: blocks are added in stream order into a temporary file in the archive
 * directory, a frame compressed at a time; seal() writes the footer and trailer, fsyncs the file,
 * renames it to its final name and fsyncs the directory. A segment is therefore whole or absent:
 * a crash before the rename leaves only the temporary file, which listSegments ignores and
 * removeUnsealed deletes.
 */
export class SegmentWriter {
  private frame: Uint8Array[] = [];
  private frameRaw = 0;
  private frameFirst = 0;
  private frameStored = 0;
  private readonly frames: FrameEntry[] = [];
  private offset = 0;
  private readonly hash: Hash = createHash("sha256");
  private first: ArchivedBlock | undefined;
  private last: ArchivedBlock | undefined;
  private records = 0;
  private rawBytes = 0;
  private storedBytes = 0;
  private count = 0;
  private closed = false;

  private constructor(
    private readonly handle: FileHandle,
    private readonly dir: string,
    private readonly temp: string,
    private readonly options: Required<SegmentWriterOptions>,
  ) {}

  /** Starts a segment in `dir` (created if missing). */
  static async open(dir: string, options: SegmentWriterOptions): Promise<SegmentWriter> {
    await mkdir(dir, { recursive: true });
    const temp = path.join(dir, `.${randomBytes(8).toString("hex")}${UNSEALED_SUFFIX}`);
    const handle = await open(temp, "wx");
    const full = {
      codec: DEFAULT_CODEC,
      frameBytes: DEFAULT_FRAME_BYTES,
      ...options,
    };
    const writer = new SegmentWriter(handle, dir, temp, full);
    await writer.write(encodeHeader(CODEC_IDS[full.codec]));
    return writer;
  }

  /** Blocks added so far. */
  get blocks(): number {
    return this.count;
  }

  /** The stream sequence of the last block added; 0 before the first. */
  get lastSeq(): number {
    return this.last?.seq ?? 0;
  }

  /** What the blocks added took in the log stream. */
  get stored(): number {
    return this.storedBytes;
  }

  /** When the stream stored the first block added (ms since epoch); undefined before one. */
  get firstTimeMs(): number | undefined {
    return this.first ? Number(this.first.timeNanos / 1_000_000n) : undefined;
  }

  /** Adds the next block of the log (its stream sequence follows the last one's). */
  async add(block: ArchivedBlock): Promise<void> {
    if (this.last && block.seq <= this.last.seq)
      throw new Error(`block ${block.seq} does not follow block ${this.last.seq} in the segment`);
    const entry = encodeEntry(block);
    if (this.frame.length === 0) this.frameFirst = block.seq;
    this.frame.push(entry);
    this.frameRaw += entry.length;
    const size = storedSize(block);
    this.frameStored += size;
    this.storedBytes += size;
    this.rawBytes += entry.length;
    this.records += recordBytes(blockHeaders(block), block.data).length;
    this.first ??= block;
    this.last = block;
    this.count++;
    if (this.frameRaw >= this.options.frameBytes) await this.flushFrame();
  }

  private async flushFrame(): Promise<void> {
    if (this.frame.length === 0 || !this.last) return;
    const raw = Buffer.concat(this.frame);
    const compressed = await compress(this.options.codec, raw);
    this.frames.push({
      offset: this.offset,
      length: compressed.length,
      rawLength: raw.length,
      firstStreamSeq: this.frameFirst,
      lastStreamSeq: this.last.seq,
      blocks: this.frame.length,
      storedBytes: this.frameStored,
      crc32: zlib.crc32(compressed),
    });
    await this.write(compressed);
    this.frame = [];
    this.frameRaw = 0;
    this.frameStored = 0;
  }

  private async write(bytes: Uint8Array): Promise<void> {
    this.hash.update(bytes);
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.handle.write(
        bytes,
        done,
        bytes.length - done,
        this.offset + done,
      );
      done += bytesWritten;
    }
    this.offset += bytes.length;
  }

  /** Writes the footer and trailer and makes the segment durable under its final name. */
  async seal(): Promise<SealedSegment> {
    const { first, last } = this;
    if (!first || !last) throw new Error("a segment needs at least one block");
    await this.flushFrame();
    const head = firstRecord(blockHeaders(first), first.data);
    const tail = lastRecord(blockHeaders(last), last.data);
    const footer: SegmentFooter = {
      format: FORMAT_VERSION,
      stream: this.options.stream,
      streamCreated: this.options.streamCreated,
      codec: this.options.codec,
      firstStreamSeq: first.seq,
      lastStreamSeq: last.seq,
      firstSequence: String(head?.sequence ?? 0n),
      lastSequence: String(tail?.sequence ?? 0n),
      firstPrevHash: head?.prevHash ?? "",
      lastHash: tail?.hash ?? "",
      blocks: this.count,
      records: this.records,
      firstTime: isoOf(first.timeNanos),
      lastTime: isoOf(last.timeNanos),
      rawBytes: this.rawBytes,
      storedBytes: this.storedBytes,
      sealedAt: new Date().toISOString(),
      frames: this.frames,
    };
    const footerBytes = Buffer.from(JSON.stringify(footer));
    const footerOffset = this.offset;
    await this.write(footerBytes);
    const trailer = encodeTrailer(footerOffset, footerBytes.length);
    this.hash.update(trailer.subarray(0, TRAILER_CHECKED_BYTES));
    this.hash.digest().copy(trailer, TRAILER_CHECKED_BYTES);
    await this.handle.write(trailer, 0, trailer.length, this.offset);
    await this.handle.sync();
    await this.handle.close();
    this.closed = true;
    const file = path.join(this.dir, segmentName(first.seq, last.seq));
    await rename(this.temp, file);
    await syncDirectory(this.dir);
    return { file, footer };
  }

  /** Abandons the segment: closes and deletes the temporary file. */
  async discard(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => {});
    }
    await rm(this.temp, { force: true });
  }
}

/** fsyncs a directory, so a rename in it survives a power loss. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** An ISO 8601 time of ns since the epoch. */
export function isoOf(nanos: bigint): string {
  return new Date(Number(nanos / 1_000_000n)).toISOString();
}
