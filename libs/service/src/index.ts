export { MemoryRelease, type MemoryReleaseOptions } from "./memory-release.js";
export {
  type RpcOptions,
  type RunningService,
  runService,
  type ServiceContext,
  type ServiceSpec,
} from "./run-service.js";
export { type IndexRebuild, loadSqlite, type OpenedIndex, openIndex } from "./sqlite.js";
