export {
  type ChainBreak,
  ChainChecker,
  type ChainHead,
  type CheckedRecord,
  chainedAfter,
  recordHash,
  verifyRecords,
} from "./hash-chain.js";
export {
  BLOCK_RECORDS_TAG,
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
