export { connectNats } from "./connect.js";
export { decodeEvent, EventTypeError, publishEvent, TYPE_HEADER } from "./events.js";
export { kvKeyToken } from "./kv.js";
export {
  ensureStream,
  type StreamSettings,
  streamDefinitions,
  subjects,
  subjectToken,
  subjectTokenDecode,
} from "./streams.js";
