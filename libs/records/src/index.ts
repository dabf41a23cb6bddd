export {
  batchEntrySize,
  encodeRecords,
  pooledBytes,
  RecordBatchError,
  recordSlices,
  varint,
} from "./batch.js";
export { answerCallLookup, lookupCall } from "./call-lookup.js";
export {
  followLog,
  type LogBlock,
  type LogFollower,
  type LogFollowerOptions,
} from "./log-follower.js";
export { BLOCK_TYPE, isBlock, LogMessageError, recordBytes } from "./log-message.js";
export { callOutcome, outcomeOf } from "./outcome-view.js";
export { endsCall, ofCall, recordKey } from "./record-keys.js";
export { traceEvents } from "./trace-view.js";
