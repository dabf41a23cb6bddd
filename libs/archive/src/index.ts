export {
  ArchiveReader,
  listSegments,
  removeUnsealed,
  type SegmentFile,
} from "./archive-dir.js";
export {
  type ArchiveBreak,
  type ArchiveVerdict,
  type SegmentCheck,
  verifyArchive,
} from "./archive-verifier.js";
export { type Codec, DEFAULT_CODEC } from "./compression.js";
export {
  CHAIN_VERSION,
  type ChainBreak,
  ChainChecker,
  type ChainHead,
  type CheckedRecord,
  chainedAfter,
  expectedHash,
  recordHash,
  recordHashV2,
  verifyRecords,
  withChainVersion,
} from "./hash-chain.js";
export {
  type ArchivedBlock,
  blockHeaders,
  encodeEntry,
  type FrameEntry,
  natsHeaderBytes,
  SegmentError,
  type SegmentFooter,
  type SegmentSummary,
  segmentName,
  storedSize,
} from "./segment-format.js";
export { SegmentReader } from "./segment-reader.js";
export {
  DEFAULT_FRAME_BYTES,
  type SealedSegment,
  SegmentWriter,
  type SegmentWriterOptions,
  syncDirectory,
} from "./segment-writer.js";
