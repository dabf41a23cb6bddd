export { type AdminAudit, AdminEvents } from "./admin-events.js";
export { type BucketLoad, loadWhenCreated } from "./bucket-wait.js";
export {
  applyBucketLimits,
  type BucketBytes,
  type BucketRetention,
  buckets,
  openBucket,
  openKv,
} from "./buckets.js";
export {
  type BusAccess,
  type BusUser,
  bucketNames,
  busAccess,
  inboxPrefix,
  isBusUser,
  legacyStreamNames,
  type NatsPermissions,
  natsPermissions,
  processUsers,
  streamNames,
} from "./bus-access.js";
export { answerOverBus, requestOverBus } from "./bus-request.js";
export {
  BusCredentialError,
  type BusCredentials,
  connectNats,
  credentialOptions,
  newInbox,
} from "./connect.js";
export { ensureConsumer, PULL_EXPIRES_MS, pullOptions } from "./consumers.js";
export {
  decodeEvent,
  EventTypeError,
  publishEncoded,
  publishEvent,
  TYPE_HEADER,
} from "./events.js";
export { FollowedBucket, followRegistryTools, type SnapshotView } from "./followed-bucket.js";
export {
  betweenLeaders,
  compareAndSet,
  JetStreamApiCodes,
  jetStreamErrorCode,
  KvConflictError,
  retryBetweenLeaders,
  retrySetup,
} from "./jetstream-errors.js";
export {
  kvKeyToken,
  UpdateConflictError,
  type UpdateRetry,
  updateWithRetry,
} from "./kv.js";
export { holdLease, type Lease, type LeasedWork } from "./lease.js";
export { MemorySnapshot } from "./memory-snapshot.js";
export {
  JetStreamPublisher,
  type OutgoingMessage,
  type PublishApiError,
  type PublishCapacity,
  PublishError,
  type PublisherOptions,
  type PublishFailure,
  type StoredAck,
} from "./publisher.js";
export { READ_YOUR_WRITE_MS, untilSnapshotShows } from "./read-your-write.js";
export { ReconnectingKvSnapshot } from "./reconnecting-snapshot.js";
export {
  type BatchAck,
  type BatchPublisher,
  RecordWriteError,
  type RecordWriteFailure,
  RecordWriter,
  type RecordWriterOptions,
} from "./record-writer.js";
export { KvSnapshot, type SnapshotChange } from "./snapshot.js";
export {
  defaultStreamSettings,
  ensureStream,
  prepareStreams,
  type RecordSource,
  type StreamBytes,
  type StreamKey,
  type StreamSettings,
  streamDefinitions,
  subjects,
  subjectToken,
  subjectTokenDecode,
} from "./streams.js";
