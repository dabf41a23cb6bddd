export { type AdminAudit, AdminEvents } from "./admin-events.js";
export {
  type BatchConsumer,
  type BatchConsumerOptions,
  consumeBatches,
  type Delivered,
} from "./batches.js";
export { type BucketLoad, loadWhenCreated } from "./bucket-wait.js";
export { buckets } from "./buckets.js";
export { connectNats } from "./connect.js";
export { consumeDurable, type DurableConsumer, type DurableConsumerOptions } from "./durable.js";
export {
  decodeEvent,
  EventTypeError,
  publishEncoded,
  publishEvent,
  TYPE_HEADER,
} from "./events.js";
export { FollowedBucket, followRegistryTools, type SnapshotView } from "./followed-bucket.js";
export {
  compareAndSet,
  JetStreamApiCodes,
  jetStreamErrorCode,
  KvConflictError,
} from "./jetstream-errors.js";
export { kvKeyToken } from "./kv.js";
export { MemorySnapshot } from "./memory-snapshot.js";
export { ReconnectingKvSnapshot } from "./reconnecting-snapshot.js";
export { KvSnapshot, type SnapshotChange } from "./snapshot.js";
export {
  ensureStream,
  type StreamSettings,
  streamDefinitions,
  subjects,
  subjectToken,
  subjectTokenDecode,
} from "./streams.js";
