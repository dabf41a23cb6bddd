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
export {
  BLOCK_TYPE,
  firstRecord,
  isBlock,
  type LoggedRecord,
  type LogHeaders,
  LogMessageError,
  lastRecord,
  readLogMessage,
  recordBytes,
} from "./log-message.js";
export { callOutcome, outcomeOf } from "./outcome-view.js";
export {
  CHAIN_VERSION_FIELD,
  HASH_FIELD,
  onlyFields,
  PREV_HASH_FIELD,
  SEQUENCE_FIELD,
  withoutChainFields,
  withoutFields,
} from "./record-fields.js";
export { endsCall, ofCall, recordKey, startsCall } from "./record-keys.js";
export { traceEvents } from "./trace-view.js";
