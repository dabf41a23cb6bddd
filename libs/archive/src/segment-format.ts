import { TYPE_HEADER } from "@toolmesh/nats";
import type { LogHeaders } from "@toolmesh/records";
import type { Codec } from "./compression.js";

/**
 * The layout of an archive segment: a sealed file of consecutive audit log messages (blocks),
 * exactly as the log stream stored them. docs/operations.md describes it for operators.
 *
 *   header   16 bytes   "TMAUDSEG", format version (u16), codec id (u8), 5 zero bytes
 *   frames   ...        each a run of block entries, compressed on its own (so one block is read
 *                       by decompressing one frame, not the file)
 *   footer   JSON       SegmentFooter: the summary (stream and chain sequences, first prev_hash,
 *                       last hash, counts, times) and where each frame is
 *   trailer  56 bytes   footer offset (u64), footer length (u32), 4 zero bytes, SHA-256 of every
 *                       byte before the checksum, "TMSEGEND"
 *
 * A block entry: stream sequence (u64), stored time in ns (i64), the length of the headers the
 * stream stored (u32, for its byte accounting), the lengths of subject, type header, message id
 * (u16 each) and data (u32), then those four. Numbers are little-endian.
 */

export const SEGMENT_MAGIC = "TMAUDSEG";
export const TRAILER_MAGIC = "TMSEGEND";
export const FORMAT_VERSION = 1;
export const HEADER_BYTES = 16;
export const TRAILER_BYTES = 56;
/** Bytes of a block entry before its subject, type, message id and data. */
const ENTRY_FIXED_BYTES = 30;
const MAX_U16 = 0xffff;

/** One log message as the archive keeps it. */
export interface ArchivedBlock {
  /** Its stream sequence in the log. */
  seq: number;
  /** When the stream stored it, ns since the epoch. */
  timeNanos: bigint;
  subject: string;
  /** Its Toolmesh-Type header ("" when it had none): says whether it is a block or one record. */
  type: string;
  /** Its Nats-Msg-Id header ("" when it had none). */
  msgId: string;
  /** The length of every header the stream stored with it, for its stored size. */
  headerBytes: number;
  data: Uint8Array;
}

/** Where a frame is in the file and which blocks it holds. */
export interface FrameEntry {
  offset: number;
  length: number;
  rawLength: number;
  firstStreamSeq: number;
  lastStreamSeq: number;
  blocks: number;
  /** The bytes its blocks took in the log stream (nats-server's accounting). */
  storedBytes: number;
  /** CRC-32 of the compressed bytes. */
  crc32: number;
}

/** What a segment holds, from its footer. Chain sequences are decimal strings (uint64). */
export interface SegmentSummary {
  format: number;
  stream: string;
  /** The log stream's creation time: another stream under the same name is another log. */
  streamCreated: string;
  codec: Codec;
  firstStreamSeq: number;
  lastStreamSeq: number;
  firstSequence: string;
  lastSequence: string;
  /** The first record's prev_hash: the previous segment's lastHash. */
  firstPrevHash: string;
  lastHash: string;
  blocks: number;
  records: number;
  /** When the stream stored the first and last block (ISO 8601). */
  firstTime: string;
  lastTime: string;
  /** Uncompressed bytes of the block entries, and what the blocks took in the log stream. */
  rawBytes: number;
  storedBytes: number;
  sealedAt: string;
}

export interface SegmentFooter extends SegmentSummary {
  frames: FrameEntry[];
}

/** Why a segment file cannot be read or does not verify; `code` says which check failed. */
export class SegmentError extends Error {
  override name = "SegmentError";
  constructor(
    readonly code:
      | "truncated"
      | "magic"
      | "version"
      | "codec"
      | "footer"
      | "checksum"
      | "frame"
      | "entry",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The bytes nats-server's file store counts for a message (its max_bytes accounting). */
export function storedSize(block: Pick<ArchivedBlock, "subject" | "headerBytes" | "data">): number {
  const subject = Buffer.byteLength(block.subject);
  return block.headerBytes > 0
    ? 22 + subject + 4 + block.headerBytes + block.data.length + 8
    : 22 + subject + block.data.length + 8;
}

/**
 * The length of a message's headers as nats-server stores them: "NATS/1.0", a "\r\n" and
 * "Key: value" for each value, and "\r\n\r\n" (the bytes nats.js sends for them). 0 for none.
 */
export function natsHeaderBytes(headers: Iterable<[string, string[]]> | undefined): number {
  if (!headers) return 0;
  let bytes = "NATS/1.0".length + 4;
  let any = false;
  for (const [key, values] of headers) {
    for (const value of values) {
      bytes += 4 + Buffer.byteLength(key) + Buffer.byteLength(value);
      any = true;
    }
  }
  return any ? bytes : 0;
}

/** The headers of an archived block, as the log message readers take them. */
export function blockHeaders(block: Pick<ArchivedBlock, "type" | "msgId">): LogHeaders {
  return {
    get: (name) =>
      name === TYPE_HEADER ? block.type : name.toLowerCase() === "nats-msg-id" ? block.msgId : "",
  };
}

/** The file header: magic, format version and codec id. */
export function encodeHeader(codecId: number): Uint8Array {
  const out = Buffer.alloc(HEADER_BYTES);
  out.write(SEGMENT_MAGIC, 0, "latin1");
  out.writeUInt16LE(FORMAT_VERSION, 8);
  out.writeUInt8(codecId, 10);
  return out;
}

/** The codec id of a file header; throws SegmentError for another file or version. */
export function decodeHeader(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < HEADER_BYTES || buf.toString("latin1", 0, 8) !== SEGMENT_MAGIC)
    throw new SegmentError("magic", "not an audit archive segment (its header is not TMAUDSEG)");
  const version = buf.readUInt16LE(8);
  if (version !== FORMAT_VERSION)
    throw new SegmentError(
      "version",
      `segment format ${version} is not one this toolmesh reads (${FORMAT_VERSION}); use a newer toolmesh`,
    );
  return buf.readUInt8(10);
}

/** One block entry of a frame. */
export function encodeEntry(block: ArchivedBlock): Uint8Array {
  const subject = Buffer.from(block.subject);
  const type = Buffer.from(block.type);
  const msgId = Buffer.from(block.msgId);
  for (const [what, part] of [
    ["subject", subject],
    ["type header", type],
    ["message id", msgId],
  ] as const) {
    if (part.length > MAX_U16)
      throw new SegmentError("entry", `block ${block.seq}: its ${what} is over 65535 bytes`);
  }
  const out = Buffer.allocUnsafe(
    ENTRY_FIXED_BYTES + subject.length + type.length + msgId.length + block.data.length,
  );
  out.writeBigUInt64LE(BigInt(block.seq), 0);
  out.writeBigInt64LE(block.timeNanos, 8);
  out.writeUInt32LE(block.headerBytes, 16);
  out.writeUInt16LE(subject.length, 20);
  out.writeUInt16LE(type.length, 22);
  out.writeUInt16LE(msgId.length, 24);
  out.writeUInt32LE(block.data.length, 26);
  let at = ENTRY_FIXED_BYTES;
  for (const part of [subject, type, msgId, block.data]) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The block entries of a decompressed frame, in order; throws SegmentError when malformed. */
export function decodeEntries(frame: Uint8Array): ArchivedBlock[] {
  const buf = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  const out: ArchivedBlock[] = [];
  let at = 0;
  while (at < buf.length) {
    if (at + ENTRY_FIXED_BYTES > buf.length)
      throw new SegmentError("entry", `a block entry is cut short at byte ${at} of its frame`);
    const subjectLength = buf.readUInt16LE(at + 20);
    const typeLength = buf.readUInt16LE(at + 22);
    const msgIdLength = buf.readUInt16LE(at + 24);
    const dataLength = buf.readUInt32LE(at + 26);
    const end = at + ENTRY_FIXED_BYTES + subjectLength + typeLength + msgIdLength + dataLength;
    if (end > buf.length)
      throw new SegmentError("entry", `a block entry runs past its frame at byte ${at}`);
    let part = at + ENTRY_FIXED_BYTES;
    const take = (length: number) => {
      const slice = buf.subarray(part, part + length);
      part += length;
      return slice;
    };
    out.push({
      seq: Number(buf.readBigUInt64LE(at)),
      timeNanos: buf.readBigInt64LE(at + 8),
      headerBytes: buf.readUInt32LE(at + 16),
      subject: take(subjectLength).toString(),
      type: take(typeLength).toString(),
      msgId: take(msgIdLength).toString(),
      data: new Uint8Array(take(dataLength)),
    });
    at = end;
  }
  return out;
}

/** The trailer: where the footer is, and the checksum of everything before the checksum. */
export function encodeTrailer(footerOffset: number, footerLength: number): Buffer {
  const out = Buffer.alloc(TRAILER_BYTES);
  out.writeBigUInt64LE(BigInt(footerOffset), 0);
  out.writeUInt32LE(footerLength, 8);
  out.write(TRAILER_MAGIC, 48, "latin1");
  return out;
}

/** Bytes of the trailer covered by the checksum (before the checksum itself). */
export const TRAILER_CHECKED_BYTES = 16;
/** Where the checksum is in the trailer. */
export const CHECKSUM_OFFSET = 16;

/** The footer's place and the checksum a trailer holds; throws SegmentError when it is not one. */
export function decodeTrailer(bytes: Uint8Array): {
  footerOffset: number;
  footerLength: number;
  checksum: Buffer;
} {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length !== TRAILER_BYTES || buf.toString("latin1", 48, 56) !== TRAILER_MAGIC)
    throw new SegmentError(
      "truncated",
      "the segment does not end in TMSEGEND: it was cut short or is not a sealed segment",
    );
  return {
    footerOffset: Number(buf.readBigUInt64LE(0)),
    footerLength: buf.readUInt32LE(8),
    checksum: Buffer.from(buf.subarray(CHECKSUM_OFFSET, CHECKSUM_OFFSET + 32)),
  };
}

/** The file name of a segment: its first and last stream sequence, so names sort in log order. */
export function segmentName(firstStreamSeq: number, lastStreamSeq: number): string {
  const pad = (n: number) => String(n).padStart(20, "0");
  return `audit-${pad(firstStreamSeq)}-${pad(lastStreamSeq)}.seg`;
}

const SEGMENT_NAME = /^audit-(\d{20})-(\d{20})\.seg$/;

/** The stream sequences a segment's name gives, or undefined for another file. */
export function parseSegmentName(
  name: string,
): { firstStreamSeq: number; lastStreamSeq: number } | undefined {
  const match = SEGMENT_NAME.exec(name);
  if (!match) return undefined;
  return { firstStreamSeq: Number(match[1]), lastStreamSeq: Number(match[2]) };
}

/** Files a writer works on before it seals them; one left behind was cut short by a crash. */
export const UNSEALED_SUFFIX = ".seg.tmp";
