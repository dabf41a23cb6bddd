import { promisify } from "node:util";
import zlib from "node:zlib";

/**
 * How a segment's frames are compressed. Both are built into every Node that toolmesh runs on
 * (22.13 and later), so a segment written anywhere reads back everywhere; zstd is not, before
 * Node 22.15, and is left out for that reason.
 */
export type Codec = "gzip" | "brotli";

/** Codec ids as the segment header stores them. */
export const CODEC_IDS: Record<Codec, number> = { gzip: 1, brotli: 2 };

/** The codec of a header id, or undefined for an id this version does not know. */
export function codecOf(id: number): Codec | undefined {
  return (Object.keys(CODEC_IDS) as Codec[]).find((codec) => CODEC_IDS[codec] === id);
}

/**
 * The codec segments are written with. On the blocks of 5,000 real calls in 256 KiB frames
 * (npm run bench:archive, three runs on a shared two-core machine), brotli at quality 4 made them
 * 3.95× smaller at 75–137 MB/s, gzip at level 6 3.78× at 70–98 MB/s; brotli decompressed at
 * 640–690 MB/s, gzip at 450–600. A segment file is 4.1× smaller than its blocks in the log. The
 * chain hashes (128 hex digits a record) are most of what does not compress.
 */
export const DEFAULT_CODEC: Codec = "brotli";

const BROTLI_QUALITY = 4;
const GZIP_LEVEL = 6;

const brotliCompress = promisify(zlib.brotliCompress);
const brotliDecompress = promisify(zlib.brotliDecompress);
const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

/** Compresses one frame off the main thread (zlib's thread pool). */
export function compress(codec: Codec, raw: Uint8Array): Promise<Uint8Array> {
  if (codec === "gzip") return gzip(raw, { level: GZIP_LEVEL });
  return brotliCompress(raw, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  });
}

/** Decompresses one frame, refusing one that would grow past `rawLength` (a bound on memory). */
export function decompress(
  codec: Codec,
  compressed: Uint8Array,
  rawLength: number,
): Promise<Uint8Array> {
  const options = { maxOutputLength: Math.max(rawLength, 1) };
  return codec === "gzip" ? gunzip(compressed, options) : brotliDecompress(compressed, options);
}
